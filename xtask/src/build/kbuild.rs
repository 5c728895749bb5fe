//! Kernel config and build: merge fragments with the tree's
//! merge_config.sh, olddefconfig, verify every requested option, then build
//! out of tree in a persistent O= dir of the kernel/arch/config, the one of
//! its few slots with the least to rebuild (build::slots; variants are
//! checked out in place, so make rebuilds only what a variant changed).
//! Images are cached by content key. No ccache: it made a cold build 25%
//! slower here, and make's own dependency tracking in the kept O= dirs is
//! what makes variants cheap.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use anyhow::{bail, Context, Result};

use crate::build::slots::Slots;
use crate::host::cache::{sha256_file, write_atomic, Cache, KeyBuilder};
use crate::host::proc::{self, limit};
use crate::plan::arch::Arch;
use crate::plan::matrix::parse_config_line;

/// First line of `gcc --version` (`clang --version` for an `llvm`
/// config), asked once per arch per run: it is part of every config,
/// kernel and guest-program key.
pub fn compiler_version(arch: Arch, llvm: bool) -> String {
    static SEEN: std::sync::Mutex<Vec<(Arch, bool, String)>> = std::sync::Mutex::new(Vec::new());
    let mut seen = SEEN.lock().unwrap();
    if let Some((_, _, v)) = seen.iter().find(|(a, l, _)| *a == arch && *l == llvm) {
        return v.clone();
    }
    let sh = xshell::Shell::new().expect("a shell");
    let cc = if llvm {
        "clang".to_string()
    } else {
        arch.gcc()
    };
    let v = xshell::cmd!(sh, "{cc} --version")
        .quiet()
        .read()
        .map(|o| o.lines().next().unwrap_or("").to_string())
        .unwrap_or_else(|_| "missing".into());
    seen.push((arch, llvm, v.clone()));
    v
}

/// `make` arguments shared by config and build; `llvm`: clang and the
/// LLVM tools (`LLVM=1`; CROSS_COMPILE still names clang's target).
pub fn make_args(tree: &Path, out: &Path, arch: Arch, llvm: bool) -> Vec<String> {
    let mut a = vec![
        "-C".to_string(),
        tree.display().to_string(),
        format!("O={}", out.display()),
        format!("ARCH={arch}"),
    ];
    if let Some(cc) = arch.info().cross_prefix {
        a.push(format!("CROSS_COMPILE={cc}"));
    }
    if llvm {
        a.push("LLVM=1".to_string());
    }
    a
}

/// Requested options: every fragment line plus each test's needs.
#[derive(Debug, Clone, Default)]
pub struct ConfigRequest {
    pub base_target: String,
    /// clang and the LLVM tools (`[config] llvm`).
    pub llvm: bool,
    pub fragments: Vec<PathBuf>,
    /// Extra lines, with where each came from (for config-error messages).
    pub lines: Vec<(String, String)>,
}

pub enum ConfigOutcome {
    Ok {
        config: PathBuf,
        cached: bool,
    },
    /// Options that did not survive olddefconfig: (line, origin, got).
    Dropped {
        missing: Vec<(String, String, String)>,
        config: PathBuf,
    },
}

fn run_logged(cmd: Command, log: &Path, what: &str) -> Result<()> {
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log)?;
    writeln!(f, "$ {what}")?;
    let out = proc::run(cmd, limit::scaled(limit::MAKE_CONFIG))
        .with_context(|| format!("running {what}"))?;
    f.write_all(out.stdout.as_bytes())?;
    f.write_all(out.stderr.as_bytes())?;
    if !out.success() {
        bail!("{what} {}; see {}", out.describe(), log.display());
    }
    Ok(())
}

/// Produces the final .config for (tree, arch, request), cached by its
/// inputs: `kconfig_id` (what Kconfig reads of the tree, source.rs), the
/// arch, the base target, the compiler, the fragments and lines.
pub fn configure(
    cache: &Cache,
    tree: &Path,
    checkout: &dyn Fn() -> Result<()>,
    kconfig_id: &str,
    arch: Arch,
    req: &ConfigRequest,
    log: &Path,
) -> Result<ConfigOutcome> {
    let mut k = KeyBuilder::new("config");
    k.add("kconfig", kconfig_id.as_bytes())
        .add("arch", arch.name().as_bytes())
        .add("base", req.base_target.as_bytes());
    k.add("cc", compiler_version(arch, req.llvm).as_bytes());
    let mut wanted: Vec<(String, String, String)> = Vec::new(); // (name, value, origin)
    for f in &req.fragments {
        let text = std::fs::read_to_string(f)
            .with_context(|| format!("reading config fragment {}", f.display()))?;
        k.add("fragment", text.as_bytes());
        for l in text.lines() {
            if let Some((n, v)) = parse_config_line(l) {
                wanted.push((n, v, f.display().to_string()));
            }
        }
    }
    for (l, origin) in &req.lines {
        k.add("line", l.as_bytes());
        if let Some((n, v)) = parse_config_line(l) {
            wanted.push((n, v, origin.clone()));
        }
    }
    let key = k.finish();
    let dir = cache.dir(&["config", &key]);
    let config = dir.join(".config");
    let cached = config.exists();
    if !cached {
        checkout()?;
        // A scratch O= dir: the persistent build dir only ever receives a
        // finished .config, and only when it differs.
        let work = cache.dir(&["config", &format!("{key}.work")]);
        let _ = std::fs::remove_dir_all(&work);
        std::fs::create_dir_all(&work)?;
        let extra = work.join("kmatrix-extra.config");
        std::fs::write(
            &extra,
            req.lines
                .iter()
                .map(|(l, _)| format!("{l}\n"))
                .collect::<String>(),
        )?;
        let mut make = Command::new("make");
        make.args(make_args(tree, &work, arch, req.llvm))
            .arg(&req.base_target);
        run_logged(make, log, &format!("make ARCH={arch} {}", req.base_target))?;
        let mut merge = Command::new(tree.join("scripts/kconfig/merge_config.sh"));
        merge
            .current_dir(tree)
            .env("ARCH", arch.name())
            .arg("-m")
            .arg("-O")
            .arg(&work)
            .arg(work.join(".config"));
        merge.args(&req.fragments).arg(&extra);
        run_logged(merge, log, "merge_config.sh -m")?;
        let mut old = Command::new("make");
        old.args(make_args(tree, &work, arch, req.llvm))
            .arg("olddefconfig");
        run_logged(old, log, &format!("make ARCH={arch} olddefconfig"))?;
        std::fs::create_dir_all(&dir)?;
        std::fs::copy(work.join(".config"), &config)?;
        let _ = std::fs::remove_dir_all(&work);
    }
    let final_text = std::fs::read_to_string(&config)?;
    let missing = verify(&final_text, &wanted);
    if !missing.is_empty() {
        return Ok(ConfigOutcome::Dropped { missing, config });
    }
    Ok(ConfigOutcome::Ok { config, cached })
}

/// Every requested (name, value) must be in the final config; `n` means
/// "is not set" or absent. Returns (requested line, origin, what we got).
pub fn verify(
    final_config: &str,
    wanted: &[(String, String, String)],
) -> Vec<(String, String, String)> {
    let mut got = std::collections::HashMap::new();
    for l in final_config.lines() {
        if let Some((n, v)) = parse_config_line(l) {
            got.insert(n, v);
        }
    }
    let mut out = Vec::new();
    for (n, v, origin) in wanted {
        let actual = got.get(n).cloned().unwrap_or_else(|| "n".into());
        if &actual != v {
            let shown = if actual == "n" {
                "not set".to_string()
            } else {
                actual
            };
            out.push((format!("{n}={v}"), origin.clone(), shown));
        }
    }
    out.dedup();
    out
}

pub struct Built {
    pub image: PathBuf,
    pub key: String,
    pub cached: bool,
    /// Built in an O= dir that already held an earlier build (make reused
    /// what did not change), as opposed to a cold build.
    pub incremental: bool,
    pub log: PathBuf,
    pub make_cmd: Vec<String>,
}

pub enum BuildOutcome {
    Ok(Built),
    Failed {
        log: PathBuf,
        excerpt: String,
        make_cmd: Vec<String>,
    },
}

pub struct BuildJob<'a> {
    pub cache: &'a Cache,
    pub tree: &'a Path,
    /// Puts `tree` at the variant's commit; called only when make runs (a
    /// cached image leaves the tree alone).
    pub checkout: &'a dyn Fn() -> Result<()>,
    pub kernel_id: &'a str,
    pub arch: Arch,
    /// clang and the LLVM tools (`[config] llvm`).
    pub llvm: bool,
    pub config: &'a Path,
    /// The variant's commit (the tree is put at it by `checkout`).
    pub commit: &'a str,
    /// The persistent O= dirs of this kernel/arch/config (slots.rs).
    pub slots: &'a Slots,
    /// Where this cell keeps its build log.
    pub log: PathBuf,
}

pub fn build_key(kernel_id: &str, arch: Arch, llvm: bool, config_text: &[u8]) -> String {
    KeyBuilder::new("kernel")
        .add("tree", kernel_id.as_bytes())
        .add("arch", arch.name().as_bytes())
        .add("config", config_text)
        .add("cc", compiler_version(arch, llvm).as_bytes())
        .add("target", arch.info().image_target.as_bytes())
        .finish()
}

#[derive(serde::Serialize, serde::Deserialize)]
struct Manifest {
    key: String,
    image_sha256: String,
    image: String,
    build_s: f64,
}

/// Looks the key up; a manifest whose image no longer hashes the same is a
/// corrupt entry: warned about, removed, rebuilt.
fn lookup(dir: &Path, warn: &mut dyn FnMut(&str)) -> Option<PathBuf> {
    let text = std::fs::read_to_string(dir.join("manifest.json")).ok()?;
    let m: Manifest = match serde_json::from_str(&text) {
        Ok(m) => m,
        Err(_) => {
            warn(&format!(
                "corrupt cache entry {} (bad manifest): rebuilding",
                dir.display()
            ));
            let _ = std::fs::remove_dir_all(dir);
            return None;
        }
    };
    let image = dir.join(&m.image);
    match sha256_file(&image) {
        Ok(h) if h == m.image_sha256 => Some(image),
        _ => {
            warn(&format!(
                "corrupt cache entry {} (image hash mismatch): rebuilding",
                dir.display()
            ));
            let _ = std::fs::remove_dir_all(dir);
            None
        }
    }
}

/// The make command line for a job in the O= dir `out`.
pub fn make_command(job: &BuildJob, out: &Path, jobs: usize) -> Vec<String> {
    let mut make_cmd = vec!["make".to_string()];
    make_cmd.extend(make_args(job.tree, out, job.arch, job.llvm));
    make_cmd.push(format!("-j{jobs}"));
    make_cmd.push(job.arch.info().image_target.to_string());
    make_cmd
}

pub fn build(
    job: &BuildJob,
    jobs: usize,
    on_line: &mut (dyn FnMut(&str) + Send),
    warn: &mut dyn FnMut(&str),
) -> Result<BuildOutcome> {
    let config_text = std::fs::read(job.config)?;
    let key = build_key(job.kernel_id, job.arch, job.llvm, &config_text);
    let entry = job.cache.dir(&["kernels", &key]);
    if let Some(image) = lookup(&entry, warn) {
        let make_cmd = make_command(job, &job.slots.dir(0), jobs);
        return Ok(BuildOutcome::Ok(Built {
            image,
            key,
            cached: true,
            incremental: false,
            log: entry.join("build.log"),
            make_cmd,
        }));
    }
    (job.checkout)()?;
    let lease = job.slots.enter(job.tree, job.commit, true, warn)?;
    let out = lease.dir.clone();
    let incremental = lease.incremental;
    let make_cmd = make_command(job, &out, jobs);
    put_config(&out, &config_text)?;
    let start = Instant::now();
    let log = &job.log;
    let mut logf = std::fs::File::create(log)?;
    writeln!(logf, "$ {}", make_cmd.join(" "))?;
    let mut cmd = Command::new(&make_cmd[0]);
    cmd.args(&make_cmd[1..])
        // Reproducible images: the same inputs give the same bytes.
        .env("KBUILD_BUILD_TIMESTAMP", "1970-01-01")
        .env("KBUILD_BUILD_USER", "kmatrix")
        .env("KBUILD_BUILD_HOST", "kmatrix");
    let bound = limit::scaled(limit::MAKE_KERNEL);
    let done = {
        let logf = &mut logf;
        proc::stream(cmd, bound, move |line| {
            let _ = writeln!(logf, "{line}");
            on_line(line);
        })?
    };
    let _ = logf.write_all(done.stderr.as_bytes());
    let complete = done.success() && !done.timed_out;
    lease.done(complete)?;
    if crate::host::signals::interrupted() {
        bail!("interrupted during the build");
    }
    if done.timed_out {
        let excerpt = format!(
            "make {} (the bound for a kernel build; KMATRIX_STEP_TIMEOUT_SCALE scales it)\n{}",
            done.describe(),
            crate::util::tail(&done.stdout, 15)
        );
        return Ok(BuildOutcome::Failed {
            log: log.clone(),
            excerpt,
            make_cmd,
        });
    }
    if !done.success() {
        let errs: Vec<String> = done.stderr.lines().map(str::to_string).collect();
        return Ok(BuildOutcome::Failed {
            log: log.clone(),
            excerpt: first_errors(&errs),
            make_cmd,
        });
    }
    let built = out.join(job.arch.info().image_path);
    let tmp = job.cache.dir(&["kernels", &format!("{key}.tmp")]);
    let _ = std::fs::remove_dir_all(&tmp);
    std::fs::create_dir_all(&tmp)?;
    let name = job.arch.info().image_target;
    std::fs::copy(&built, tmp.join(name))
        .with_context(|| format!("copying {}", built.display()))?;
    std::fs::copy(job.config, tmp.join("config"))?;
    std::fs::copy(log, tmp.join("build.log"))?;
    // The image's symbols, for `boot --gdb` (7-19 MB for tiny).
    let _ = std::fs::copy(out.join("vmlinux"), tmp.join("vmlinux"));
    let m = Manifest {
        key: key.clone(),
        image_sha256: sha256_file(&tmp.join(name))?,
        image: name.into(),
        build_s: start.elapsed().as_secs_f64(),
    };
    write_atomic(
        &tmp.join("manifest.json"),
        serde_json::to_string_pretty(&m)?.as_bytes(),
    )?;
    let _ = std::fs::remove_dir_all(&entry);
    std::fs::rename(&tmp, &entry)?;
    Ok(BuildOutcome::Ok(Built {
        image: entry.join(name),
        key,
        cached: false,
        incremental,
        log: log.clone(),
        make_cmd,
    }))
}

/// The vmlinux of a cached `image`: kept beside it, or, for an image
/// cached before vmlinux was kept, the one in a build dir of `slots`
/// whose image is byte for byte the same.
pub fn vmlinux_of(image: &Path, arch: Arch, slots: &Slots) -> Option<PathBuf> {
    let kept = image.with_file_name("vmlinux");
    if kept.exists() {
        return Some(kept);
    }
    let want = sha256_file(image).ok()?;
    (0..crate::build::slots::MAX)
        .map(|i| slots.dir(i))
        .find(|d| {
            d.join("vmlinux").exists()
                && sha256_file(&d.join(arch.info().image_path)).ok().as_ref() == Some(&want)
        })
        .map(|d| d.join("vmlinux"))
}

/// Writes `config` as the O= dir's .config, only when it differs: an
/// identical one keeps its mtime (and make its objects).
pub fn put_config(out: &Path, config: &[u8]) -> Result<()> {
    std::fs::create_dir_all(out)?;
    let dst = out.join(".config");
    if std::fs::read(&dst).ok().as_deref() != Some(config) {
        std::fs::write(&dst, config)?;
    }
    Ok(())
}

/// The first compiler/linker errors, with a little context.
pub fn first_errors(lines: &[String]) -> String {
    let idx = lines.iter().position(|l| {
        l.contains("error:") || l.contains("Error ") || l.contains("undefined reference")
    });
    match idx {
        Some(i) => lines[i.saturating_sub(3)..(i + 12).min(lines.len())].join("\n"),
        None => lines[lines.len().saturating_sub(15)..].join("\n"),
    }
}

/// The one line that says why a build failed, for a table cell or a
/// verdict: the compiler's `FILE:L:C: error: ...`; else the linker's
/// undefined reference with the object and function of the line before it
/// (`kernel/seccomp.o: in function `f': undefined reference to `__udivdi3'`,
/// without the section offset, which moves with any change); else make's
/// own `Error 1` line.
pub fn first_error(text: &str) -> String {
    let lines: Vec<&str> = text.lines().collect();
    if let Some(l) = lines
        .iter()
        .find(|l| l.contains(": error: ") || l.contains(": fatal error: "))
    {
        return l.trim().to_string();
    }
    if let Some(i) = lines
        .iter()
        .position(|l| l.contains("undefined reference to "))
    {
        let what = &lines[i][lines[i].find("undefined reference to ").unwrap_or(0)..];
        let place = i
            .checked_sub(1)
            .map(|j| lines[j].trim())
            .filter(|l| l.contains(": in function "))
            .map(|l| format!("{} ", l.trim_start_matches("ld: ")))
            .unwrap_or_default();
        return format!("{place}{what}");
    }
    lines
        .iter()
        .find(|l| l.contains("Error "))
        .map(|l| l.trim().to_string())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w(n: &str, v: &str) -> (String, String, String) {
        (n.into(), v.into(), "frag".into())
    }

    /// A real i386 build of 6.1 that a u64 division broke (the linker's
    /// words, after a warning and before make's): the object, the function
    /// and the symbol, no section offset.
    #[test]
    fn the_first_error_of_a_link_that_failed() {
        let log = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../tests/fixtures/patchcheck/ld-i386-udivdi3.log"
        ))
        .unwrap();
        assert_eq!(
            first_error(&log),
            "kernel/seccomp.o: in function `seccomp_do_user_notification': undefined reference to `__udivdi3'"
        );
        assert_eq!(
            first_error("a.c:1:2: error: x\nb.o: in function `f':\nb.c:(.text+0x1): undefined reference to `g'"),
            "a.c:1:2: error: x"
        );
        assert_eq!(
            first_error("make[1]: *** [Makefile:1: all] Error 2"),
            "make[1]: *** [Makefile:1: all] Error 2"
        );
        assert_eq!(first_error("nothing here"), "");
    }

    #[test]
    fn verify_reports_dropped_and_changed_options() {
        let cfg = "CONFIG_A=y\n# CONFIG_B is not set\nCONFIG_C=m\nCONFIG_D=\"x\"\n";
        let miss = verify(
            cfg,
            &[
                w("CONFIG_A", "y"),
                w("CONFIG_B", "y"),
                w("CONFIG_C", "y"),
                w("CONFIG_E", "n"),
                w("CONFIG_D", "\"x\""),
            ],
        );
        assert_eq!(
            miss,
            vec![
                (
                    "CONFIG_B=y".to_string(),
                    "frag".to_string(),
                    "not set".to_string()
                ),
                (
                    "CONFIG_C=y".to_string(),
                    "frag".to_string(),
                    "m".to_string()
                )
            ]
        );
    }

    #[test]
    fn first_errors_finds_the_compiler_error() {
        let lines: Vec<String> = [
            "  CC a.o",
            "  CC b.o",
            "kernel/seccomp.c: In function 'f':",
            "kernel/seccomp.c:12:5: error: 'x' undeclared",
            "make[2]: *** Error 1",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let e = first_errors(&lines);
        assert!(
            e.starts_with("  CC a.o") && e.contains("error: 'x' undeclared"),
            "{e}"
        );
    }

    #[test]
    fn make_args_cross_compile_only_for_arm64() {
        let a = make_args(Path::new("/t"), Path::new("/o"), Arch::Arm64, false);
        assert_eq!(
            a,
            [
                "-C",
                "/t",
                "O=/o",
                "ARCH=arm64",
                "CROSS_COMPILE=aarch64-linux-gnu-"
            ]
        );
        assert!(
            !make_args(Path::new("/t"), Path::new("/o"), Arch::X86_64, false)
                .iter()
                .any(|x| x.starts_with("CROSS"))
        );
        // clang: LLVM=1, and the cross prefix still gives clang its target.
        let a = make_args(Path::new("/t"), Path::new("/o"), Arch::Arm64, true);
        assert_eq!(
            &a[3..],
            ["ARCH=arm64", "CROSS_COMPILE=aarch64-linux-gnu-", "LLVM=1"]
        );
    }
}
