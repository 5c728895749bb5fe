//! A kselftest target built the way the kernel builds it: `make -C
//! tools/testing/selftests TARGETS=T install` of the tree, for the guest
//! arch (its cross compiler), against the tree's exported headers
//! (`KHDR_INCLUDES`), linked as the target's Makefile links it. The shared
//! libraries its programs need (and the loader they name) are found in the
//! arch's library directories and kept beside the install, so the guest
//! runs what was linked. Cached by content: the selftests and tools/
//! headers of the tree, the exported headers' inputs, the arch and the
//! compiler.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result};

use crate::build::kbuild::compiler_version;
use crate::host::cache::{write_atomic, Cache, KeyBuilder};
use crate::host::proc::{self, limit};
use crate::plan::arch::Arch;

/// An installed target, or make's failure.
pub enum Built {
    Ok(Installed),
    Failed { cmd: String, output: String },
}

pub struct Installed {
    /// The target's installed directory: its programs and their files.
    pub dir: PathBuf,
    /// Its `kselftest-list.txt` (`target:program` lines).
    pub list: String,
    /// Shared libraries and the loader, as (path in the guest, cached copy).
    pub libs: Vec<(String, PathBuf)>,
    pub cmd: String,
    /// What make and the compiler said.
    pub said: String,
}

/// The make command line (also the reproducer).
pub fn make_command(
    tree: &Path,
    out: &Path,
    target: &str,
    arch: Arch,
    headers: &Path,
    jobs: usize,
) -> Vec<String> {
    let mut v = vec![
        "make".to_string(),
        "-C".into(),
        tree.join("tools/testing/selftests").display().to_string(),
        format!("TARGETS={target}"),
        format!("ARCH={}", arch.name()),
    ];
    if let Some(cc) = arch.info().cross_prefix {
        v.push(format!("CROSS_COMPILE={cc}"));
    }
    v.extend([
        format!("O={}", out.join("build").display()),
        format!("KHDR_INCLUDES=-isystem {}", headers.display()),
        format!("KSFT_INSTALL_PATH={}", out.join("install").display()),
        format!("-j{jobs}"),
        "install".into(),
    ]);
    v
}

/// Builds and installs `target` of `tree` for `arch` (or finds it in the
/// cache). `headers`: the tree's exported headers for the arch.
pub fn build(
    cache: &Cache,
    tree: &Path,
    target: &str,
    arch: Arch,
    headers: &Path,
    key_parts: &[(String, String)],
    jobs: usize,
) -> Result<Built> {
    let mut key = KeyBuilder::new("kselftest-target");
    key.add("target", target.as_bytes())
        .add("arch", arch.name().as_bytes())
        .add("cc", compiler_version(arch, false).as_bytes())
        .add("libs-in", arch.info().multiarch.as_bytes());
    for (k, v) in key_parts {
        key.add(k, v.as_bytes());
    }
    let dir = cache.dir(&["ksft", &key.finish()]);
    let cmd = make_command(tree, &dir, target, arch, headers, jobs);
    let shown = crate::util::shell_line(&cmd);
    let installed = |said: String| -> Result<Installed> {
        let list =
            std::fs::read_to_string(dir.join("install/kselftest-list.txt")).unwrap_or_default();
        Ok(Installed {
            dir: dir.join("install").join(target),
            list,
            libs: read_libs(&dir)?,
            cmd: shown.clone(),
            said,
        })
    };
    let done = dir.join(".done");
    if done.exists() {
        let said = std::fs::read_to_string(dir.join("make-output")).unwrap_or_default();
        return Ok(Built::Ok(installed(said)?));
    }
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir)?;
    let mut c = Command::new(&cmd[0]);
    // The compiler's own words, in ASCII quotes, on any host.
    c.args(&cmd[1..]).env("LC_ALL", "C");
    let f = proc::run(c, limit::scaled(limit::GUEST_CC))
        .with_context(|| format!("make TARGETS={target} install"))?;
    let output = format!("{}{}", f.stdout, f.stderr);
    let target_dir = dir.join("install").join(target);
    if !f.success() || !target_dir.is_dir() {
        return Ok(Built::Failed {
            cmd: shown,
            output: format!("make {}\n{output}", f.describe()),
        });
    }
    let libs = match needed_libs(&target_dir, arch)? {
        Ok(l) => l,
        Err(why) => {
            return Ok(Built::Failed {
                cmd: shown,
                output: why,
            })
        }
    };
    let lib_dir = dir.join("libs");
    std::fs::create_dir_all(&lib_dir)?;
    let mut index = String::new();
    for (guest, host) in &libs {
        let name = Path::new(guest).file_name().unwrap_or_default();
        std::fs::copy(host, lib_dir.join(name))
            .with_context(|| format!("copying {}", host.display()))?;
        index.push_str(&format!("{guest}\n"));
    }
    write_atomic(&dir.join("libs.txt"), index.as_bytes())?;
    write_atomic(&dir.join("make-output"), f.stderr.as_bytes())?;
    // The build objects are not needed again: the install is the product.
    let _ = std::fs::remove_dir_all(dir.join("build"));
    std::fs::write(&done, "")?;
    Ok(Built::Ok(installed(f.stderr)?))
}

/// The libraries kept beside an install (`libs.txt`).
fn read_libs(dir: &Path) -> Result<Vec<(String, PathBuf)>> {
    let text = std::fs::read_to_string(dir.join("libs.txt")).unwrap_or_default();
    Ok(text
        .lines()
        .filter(|l| !l.is_empty())
        .map(|g| {
            let name = Path::new(g).file_name().unwrap_or_default();
            (g.to_string(), dir.join("libs").join(name))
        })
        .collect())
}

/// What `readelf` says an ELF file needs: its loader (`Requesting program
/// interpreter: ...`) and its `NEEDED` libraries.
pub fn elf_needs(program_headers: &str, dynamic: &str) -> (Option<String>, Vec<String>) {
    let interp = program_headers.lines().find_map(|l| {
        l.split_once("Requesting program interpreter: ")
            .map(|(_, r)| r.trim_end_matches(']').trim().to_string())
    });
    let needed = dynamic
        .lines()
        .filter(|l| l.contains("(NEEDED)"))
        .filter_map(|l| {
            let (_, r) = l.split_once("Shared library: [")?;
            Some(r.trim_end().trim_end_matches(']').to_string())
        })
        .collect();
    (interp, needed)
}

/// Every shared library the ELF files under `dir` need, transitively, with
/// the loader they name: (path in the guest, file on the host). Libraries
/// go to the arch's multiarch directory (`/lib/x86_64-linux-gnu`), where
/// its loader looks without `LD_LIBRARY_PATH` (a test that execs with a
/// clean environment still finds them), the loader to the path the
/// programs name. Err(why) names a library the arch's directories lack.
#[allow(clippy::type_complexity)]
fn needed_libs(
    dir: &Path,
    arch: Arch,
) -> Result<std::result::Result<Vec<(String, PathBuf)>, String>> {
    let mut todo: Vec<PathBuf> = Vec::new();
    walk(dir, &mut todo)?;
    let mut out: Vec<(String, PathBuf)> = Vec::new();
    let mut seen: Vec<String> = Vec::new();
    while let Some(file) = todo.pop() {
        let mut head = [0u8; 4];
        use std::io::Read;
        let is_elf = std::fs::File::open(&file)
            .and_then(|mut f| f.read_exact(&mut head))
            .is_ok()
            && head == *b"\x7fELF";
        if !is_elf {
            continue;
        }
        let read = |flag: &str| -> Result<String> {
            let mut c = Command::new("readelf");
            c.args([flag, "-W"]).arg(&file);
            Ok(proc::run(c, limit::scaled(limit::QUERY))
                .context("readelf")?
                .stdout)
        };
        let (interp, needed) = elf_needs(&read("-l")?, &read("-d")?);
        if let Some(i) = interp {
            if !seen.contains(&i) {
                seen.push(i.clone());
                let name = Path::new(&i)
                    .file_name()
                    .unwrap_or_default()
                    .to_string_lossy()
                    .to_string();
                match find_lib(&name, arch) {
                    Some(host) => out.push((i, host)),
                    None => return Ok(Err(missing(&name, arch))),
                }
            }
        }
        for n in needed {
            if seen.contains(&n) {
                continue;
            }
            seen.push(n.clone());
            match find_lib(&n, arch) {
                Some(host) => {
                    todo.push(host.clone());
                    out.push((format!("/lib/{}/{n}", arch.info().multiarch), host));
                }
                None => return Ok(Err(missing(&n, arch))),
            }
        }
    }
    out.sort();
    Ok(Ok(out))
}

fn missing(lib: &str, arch: Arch) -> String {
    format!(
        "{lib}, which the target's programs need, is in none of {arch}'s library directories ({}): the package that ships it for {arch} is not installed",
        arch.info().lib_dirs.join(", ")
    )
}

/// A library by name in the arch's directories, links followed.
fn find_lib(name: &str, arch: Arch) -> Option<PathBuf> {
    arch.info()
        .lib_dirs
        .iter()
        .map(|d| Path::new(d).join(name))
        .find(|p| p.is_file())
        .and_then(|p| std::fs::canonicalize(p).ok())
}

/// Every regular file under `dir`.
fn walk(dir: &Path, out: &mut Vec<PathBuf>) -> Result<()> {
    for e in std::fs::read_dir(dir).with_context(|| format!("reading {}", dir.display()))? {
        let e = e?;
        let t = e.file_type()?;
        if t.is_dir() {
            walk(&e.path(), out)?;
        } else if t.is_file() {
            out.push(e.path());
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(name: &str) -> String {
        std::fs::read_to_string(format!(
            "{}/../tests/fixtures/readelf/{name}",
            env!("CARGO_MANIFEST_DIR")
        ))
        .unwrap()
    }

    /// readelf's words (binutils 2.40, Debian 12) for Debian's /bin/ls
    /// and the arm64 cross libc: the loader and the NEEDED libraries.
    #[test]
    fn readelf_output_gives_the_loader_and_the_libraries() {
        let (i, n) = elf_needs(
            &fixture("ls-x86_64.program-headers"),
            &fixture("ls-x86_64.dynamic"),
        );
        assert_eq!(i.as_deref(), Some("/lib64/ld-linux-x86-64.so.2"));
        assert_eq!(n, ["libselinux.so.1", "libc.so.6"]);
        let (i, n) = elf_needs(
            &fixture("libc-arm64.program-headers"),
            &fixture("libc-arm64.dynamic"),
        );
        assert_eq!(i.as_deref(), Some("/lib/ld-linux-aarch64.so.1"));
        assert_eq!(n, ["ld-linux-aarch64.so.1"]);
        assert_eq!(
            elf_needs("", "\nThere is no dynamic section in this file.\n"),
            (None, vec![])
        );
    }
}
