//! Guest programs: kselftests compiled from a kernel tree against that
//! tree's exported headers, and benchmarks from rootfs/guest/, all static,
//! with the guest arch's gcc; then the initramfs that carries them.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context, Result};

use crate::cache::{Cache, KeyBuilder};
use crate::cpio::Entry;
use crate::kbuild::{compiler_version, gcc, make_args};
use crate::matrix::{TestKind, TestSpec};

/// A compiled guest program and how the init runs it.
#[derive(Debug, Clone)]
pub struct Program {
    pub test: String,
    /// A compiled binary, or a script carried in the initramfs as-is.
    pub binary: PathBuf,
    pub script: Option<String>,
    pub args: Vec<String>,
    pub timeout_s: u64,
    pub compile_cmd: String,
}

pub enum CompileOutcome {
    Ok(Program),
    Failed { test: String, cmd: String, stderr: String },
}

/// kselftest `settings`: `timeout=N`.
pub fn settings_timeout(dir: &Path) -> Option<u64> {
    let text = std::fs::read_to_string(dir.join("settings")).ok()?;
    text.lines().find_map(|l| l.trim().strip_prefix("timeout=")?.trim().parse().ok())
}

/// `make headers_install` of `tree` for `arch`, cached by the tree's id.
pub fn headers(cache: &Cache, tree: &Path, kernel_id: &str, arch: &str) -> Result<PathBuf> {
    let key = KeyBuilder::new("headers").add("tree", kernel_id.as_bytes()).add("arch", arch.as_bytes()).finish();
    let dir = cache.dir(&["headers", &key]);
    let include = dir.join("usr/include");
    if dir.join(".done").exists() {
        return Ok(include);
    }
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir)?;
    let out = Command::new("make").args(make_args(tree, &dir, arch)).arg("headers_install").output()?;
    if !out.status.success() {
        bail!("make headers_install for {arch} failed:\n{}", String::from_utf8_lossy(&out.stderr));
    }
    std::fs::write(dir.join(".done"), "")?;
    Ok(include)
}

pub struct CompileJob<'a> {
    pub cache: &'a Cache,
    pub repo_root: &'a Path,
    pub arch: &'a str,
    /// Tree the kselftests come from, its kernel id (for headers) and HEAD tree id.
    pub tree: &'a Path,
    pub tree_kernel_id: &'a str,
    pub scale_timeouts: u64,
}

pub fn compile(job: &CompileJob, name: &str, spec: &TestSpec) -> Result<CompileOutcome> {
    if let (TestKind::Shell, Some(command)) = (spec.kind, &spec.command) {
        return Ok(CompileOutcome::Ok(Program {
            test: name.to_string(),
            binary: PathBuf::from("run.sh"),
            script: Some(format!("#!/bin/sh\n{command}\n")),
            args: spec.args.clone(),
            timeout_s: spec.timeout_s.unwrap_or(60) * job.scale_timeouts,
            compile_cmd: String::new(),
        }));
    }
    let cc = gcc(job.arch);
    let mut key = KeyBuilder::new("guest-program");
    key.add("arch", job.arch.as_bytes()).add("cc", compiler_version(job.arch).as_bytes());
    let mut cmd: Vec<String> = vec![cc.clone(), "-static".into(), "-O2".into(), "-Wall".into()];
    let default_timeout;
    match spec.kind {
        TestKind::Kselftest => {
            let dir = spec.dir.as_deref().unwrap();
            let src_dir = job.tree.join(dir);
            key.add("tree-dir", crate::source::subtree_id(job.tree, dir)?.as_bytes());
            key.add("harness", crate::source::subtree_id(job.tree, "tools/testing/selftests/kselftest_harness.h").unwrap_or_default().as_bytes());
            let include = headers(job.cache, job.tree, job.tree_kernel_id, job.arch)?;
            key.add("headers", job.tree_kernel_id.as_bytes());
            // As the selftests Makefile does: exported headers first.
            cmd.push("-isystem".into());
            cmd.push(include.display().to_string());
            cmd.push(format!("-I{}", job.tree.join("tools/testing/selftests").display()));
            for s in &spec.sources {
                cmd.push(src_dir.join(s).display().to_string());
            }
            default_timeout = settings_timeout(&src_dir).unwrap_or(45);
        }
        TestKind::Shell => unreachable!("handled above"),
        TestKind::Bench => {
            let src = job.repo_root.join(spec.source.as_deref().unwrap());
            let text = std::fs::read(&src).with_context(|| format!("test {name}: reading {}", src.display()))?;
            key.add("source", &text);
            cmd.push(src.display().to_string());
            default_timeout = 120;
        }
    }
    for l in &spec.libs {
        cmd.push(format!("-l{l}"));
    }
    // Flags and libraries, not paths: the same program in another checkout
    // is the same program.
    key.add("flags", format!("{:?} {:?}", &cmd[1..4], &spec.libs).as_bytes());
    let out_dir = job.cache.dir(&["guest", &key.finish()]);
    let binary = out_dir.join(name);
    cmd.push("-o".into());
    cmd.push(binary.display().to_string());
    let compile_cmd = cmd.join(" ");
    let program = Program {
        test: name.to_string(),
        binary: binary.clone(),
        script: None,
        args: spec.args.clone(),
        timeout_s: spec.timeout_s.unwrap_or(default_timeout) * job.scale_timeouts,
        compile_cmd: compile_cmd.clone(),
    };
    if binary.exists() {
        return Ok(CompileOutcome::Ok(program));
    }
    std::fs::create_dir_all(&out_dir)?;
    let out = Command::new(&cmd[0]).args(&cmd[1..]).output().with_context(|| format!("running {cc}"))?;
    if !out.status.success() {
        let _ = std::fs::remove_file(&binary);
        return Ok(CompileOutcome::Failed { test: name.into(), cmd: compile_cmd, stderr: String::from_utf8_lossy(&out.stderr).into_owned() });
    }
    Ok(CompileOutcome::Ok(program))
}

/// The initramfs: busybox, our init, the test list and the programs.
pub fn initramfs(repo_root: &Path, busybox: &Path, programs: &[Program]) -> Result<Vec<u8>> {
    let dir = |p: &str| Entry::Dir { path: p.into(), mode: 0o755 };
    let mut e = vec![
        dir("bin"), dir("dev"), dir("proc"), dir("sys"), dir("tmp"), dir("root"), dir("etc"), dir("etc/kmatrix"), dir("tests"),
        Entry::CharDev { path: "dev/console".into(), mode: 0o600, major: 5, minor: 1 },
        Entry::CharDev { path: "dev/null".into(), mode: 0o666, major: 1, minor: 3 },
    ];
    let read = |p: &Path| std::fs::read(p).with_context(|| format!("reading {}", p.display()));
    e.push(Entry::File { path: "bin/busybox".into(), mode: 0o755, data: read(busybox)? });
    e.push(Entry::Symlink { path: "bin/sh".into(), target: "busybox".into() });
    e.push(Entry::File { path: "init".into(), mode: 0o755, data: read(&repo_root.join("rootfs/init"))? });
    let mut list = String::from("# name timeout_s command...\n");
    for p in programs {
        let bin = p.binary.file_name().unwrap().to_string_lossy().to_string();
        e.push(dir(&format!("tests/{}", p.test)));
        let data = match &p.script {
            Some(text) => text.clone().into_bytes(),
            None => read(&p.binary)?,
        };
        e.push(Entry::File { path: format!("tests/{}/{bin}", p.test), mode: 0o755, data });
        list.push_str(&format!("{} {} ./{bin} {}\n", p.test, p.timeout_s, p.args.join(" ")));
    }
    e.push(Entry::File { path: "etc/kmatrix/tests".into(), mode: 0o644, data: list.into_bytes() });
    Ok(crate::cpio::gzip(&crate::cpio::write(&e)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_file_timeout() {
        let d = std::env::temp_dir().join(format!("kmatrix-settings-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        assert_eq!(settings_timeout(&d), None);
        std::fs::write(d.join("settings"), "timeout=120\n").unwrap();
        assert_eq!(settings_timeout(&d), Some(120));
        std::fs::remove_dir_all(d).unwrap();
    }
}
