//! Guest programs: kselftests compiled from a kernel tree against that
//! tree's exported headers, and benchmarks from rootfs/guest/, all static,
//! with the guest arch's gcc; then the initramfs that carries them.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result};

use crate::build::cpio::Entry;
use crate::build::kbuild::{compiler_version, make_args};
use crate::host::cache::{Cache, KeyBuilder};
use crate::host::proc::{self, limit};
use crate::kinds::{self, Recipe};
use crate::plan::arch::Arch;
use crate::plan::matrix::TestSpec;

/// A compiled guest program and how the init runs it.
#[derive(Debug, Clone)]
pub struct Program {
    pub test: String,
    /// A compiled binary, or a script carried in the initramfs as-is.
    pub binary: PathBuf,
    pub script: Option<String>,
    pub args: Vec<String>,
    /// Guest timeout for real hardware; the initramfs scales it for the
    /// accelerator (`timeout_scale`).
    pub timeout_s: u64,
    pub compile_cmd: String,
}

pub enum CompileOutcome {
    Ok(Program),
    Failed {
        test: String,
        cmd: String,
        stderr: String,
    },
}

/// `make headers_install` of `tree` for `arch`, cached by the identity of
/// its inputs (`source::uapi_id`).
pub fn headers(cache: &Cache, tree: &Path, uapi_id: &str, arch: Arch) -> Result<PathBuf> {
    let key = KeyBuilder::new("headers")
        .add("uapi", uapi_id.as_bytes())
        .add("arch", arch.name().as_bytes())
        .finish();
    let dir = cache.dir(&["headers", &key]);
    let include = dir.join("usr/include");
    if dir.join(".done").exists() {
        return Ok(include);
    }
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir)?;
    let mut make = Command::new("make");
    make.args(make_args(tree, &dir, arch))
        .arg("headers_install");
    proc::checked(
        &format!("make headers_install for {arch}"),
        make,
        limit::scaled(limit::HEADERS),
    )?;
    std::fs::write(dir.join(".done"), "")?;
    Ok(include)
}

pub struct CompileJob<'a> {
    pub cache: &'a Cache,
    pub repo_root: &'a Path,
    pub arch: Arch,
    /// Tree the kselftests come from, and the identity of its exported
    /// headers' inputs (`source::uapi_id`).
    pub tree: &'a Path,
    pub uapi_id: &'a str,
}

/// kselftest timeouts assume real hardware; emulation is slower.
pub fn timeout_scale(accel: &crate::boot::qemu::Accel) -> u64 {
    if *accel == crate::boot::qemu::Accel::Kvm {
        1
    } else {
        3
    }
}

/// The cache key of a compiled program: compiler, flags, libraries, the
/// list of sources and their bytes, and whatever the kind adds. Paths are
/// left out: the same program in another checkout is the same program.
fn program_key(
    arch: Arch,
    flags: &[String],
    spec: &TestSpec,
    sources: &[(String, Vec<u8>)],
    parts: &[(String, String)],
    headers: Option<&str>,
) -> String {
    let mut key = KeyBuilder::new("guest-program");
    key.add("arch", arch.name().as_bytes())
        .add("cc", compiler_version(arch).as_bytes());
    key.add("flags", format!("{flags:?}").as_bytes())
        .add("libs", format!("{:?}", spec.libs).as_bytes());
    for (name, bytes) in sources {
        key.add("source-name", name.as_bytes()).add("source", bytes);
    }
    for (k, v) in parts {
        key.add(k, v.as_bytes());
    }
    if let Some(h) = headers {
        key.add("headers", h.as_bytes());
    }
    key.finish()
}

pub fn compile(job: &CompileJob, name: &str, spec: &TestSpec) -> Result<CompileOutcome> {
    let recipe = kinds::of(spec.kind).recipe(name, spec, job.tree, job.repo_root)?;
    let (sources, tree_headers, includes, key_parts, default_timeout) = match recipe {
        Recipe::Script(text) => {
            return Ok(CompileOutcome::Ok(Program {
                test: name.to_string(),
                binary: PathBuf::from("run.sh"),
                script: Some(text),
                args: spec.args.clone(),
                timeout_s: spec.timeout_s.unwrap_or(60),
                compile_cmd: String::new(),
            }));
        }
        Recipe::Compile {
            sources,
            tree_headers,
            includes,
            key_parts,
            default_timeout_s,
        } => (
            sources,
            tree_headers,
            includes,
            key_parts,
            default_timeout_s,
        ),
    };
    let cc = job.arch.gcc();
    let flags: Vec<String> = ["-static", "-O2", "-Wall"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let mut cmd: Vec<String> = std::iter::once(cc.clone())
        .chain(flags.iter().cloned())
        .collect();
    let headers_dir = if tree_headers {
        Some(headers(job.cache, job.tree, job.uapi_id, job.arch)?)
    } else {
        None
    };
    if let Some(h) = &headers_dir {
        // As the selftests Makefile does: exported headers first.
        cmd.push("-isystem".into());
        cmd.push(h.display().to_string());
    }
    for i in &includes {
        cmd.push(format!("-I{}", i.display()));
    }
    let mut keyed = Vec::new();
    for s in &sources {
        let bytes =
            std::fs::read(s).with_context(|| format!("test {name}: reading {}", s.display()))?;
        keyed.push((
            s.file_name()
                .unwrap_or_default()
                .to_string_lossy()
                .into_owned(),
            bytes,
        ));
        cmd.push(s.display().to_string());
    }
    for l in &spec.libs {
        cmd.push(format!("-l{l}"));
    }
    let key = program_key(
        job.arch,
        &flags,
        spec,
        &keyed,
        &key_parts,
        headers_dir.as_ref().map(|_| job.uapi_id),
    );
    let out_dir = job.cache.dir(&["guest", &key]);
    let binary = out_dir.join(name);
    cmd.push("-o".into());
    cmd.push(binary.display().to_string());
    let compile_cmd = cmd.join(" ");
    let program = Program {
        test: name.to_string(),
        binary: binary.clone(),
        script: None,
        args: spec.args.clone(),
        timeout_s: spec.timeout_s.unwrap_or(default_timeout),
        compile_cmd: compile_cmd.clone(),
    };
    if binary.exists() {
        return Ok(CompileOutcome::Ok(program));
    }
    std::fs::create_dir_all(&out_dir)?;
    let tmp = out_dir.join(format!(".{name}.tmp"));
    let mut c = Command::new(&cmd[0]);
    c.args(&cmd[1..cmd.len() - 1]).arg(&tmp);
    let out = proc::run(c, limit::scaled(limit::GUEST_CC))?;
    if !out.success() {
        let _ = std::fs::remove_file(&tmp);
        let why = if out.timed_out {
            format!("{cc} {}\n", out.describe())
        } else {
            String::new()
        };
        return Ok(CompileOutcome::Failed {
            test: name.into(),
            cmd: compile_cmd,
            stderr: why + &out.stderr,
        });
    }
    // Atomic: a compile killed half-way never leaves a binary to reuse.
    std::fs::rename(&tmp, &binary)?;
    Ok(CompileOutcome::Ok(program))
}

/// The initramfs: busybox, our init, the test list and the programs.
pub fn initramfs(
    repo_root: &Path,
    busybox: &Path,
    programs: &[Program],
    timeout_scale: u64,
) -> Result<Vec<u8>> {
    let dir = |p: &str| Entry::Dir {
        path: p.into(),
        mode: 0o755,
    };
    let mut e = vec![
        dir("bin"),
        dir("dev"),
        dir("proc"),
        dir("sys"),
        dir("tmp"),
        dir("root"),
        dir("etc"),
        dir("etc/kmatrix"),
        dir("tests"),
        Entry::CharDev {
            path: "dev/console".into(),
            mode: 0o600,
            major: 5,
            minor: 1,
        },
        Entry::CharDev {
            path: "dev/null".into(),
            mode: 0o666,
            major: 1,
            minor: 3,
        },
    ];
    let read = |p: &Path| std::fs::read(p).with_context(|| format!("reading {}", p.display()));
    e.push(Entry::File {
        path: "bin/busybox".into(),
        mode: 0o755,
        data: read(busybox)?,
    });
    e.push(Entry::Symlink {
        path: "bin/sh".into(),
        target: "busybox".into(),
    });
    e.push(Entry::File {
        path: "init".into(),
        mode: 0o755,
        data: read(&repo_root.join("rootfs/init"))?,
    });
    let mut list = String::from("# name timeout_s command...\n");
    for p in programs {
        let bin = p.binary.file_name().unwrap().to_string_lossy().to_string();
        e.push(dir(&format!("tests/{}", p.test)));
        let data = match &p.script {
            Some(text) => text.clone().into_bytes(),
            None => read(&p.binary)?,
        };
        e.push(Entry::File {
            path: format!("tests/{}/{bin}", p.test),
            mode: 0o755,
            data,
        });
        list.push_str(&format!(
            "{} {} ./{bin} {}\n",
            p.test,
            p.timeout_s * timeout_scale,
            p.args.join(" ")
        ));
    }
    e.push(Entry::File {
        path: "etc/kmatrix/tests".into(),
        mode: 0o644,
        data: list.into_bytes(),
    });
    Ok(crate::build::cpio::gzip(&crate::build::cpio::write(&e)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::matrix::TestKind;

    fn spec(libs: &[&str], sources: &[&str]) -> TestSpec {
        let text =
            format!("kind = \"kselftest\"\ndir = \"d\"\nsources = {sources:?}\nlibs = {libs:?}\n");
        let s: TestSpec = toml::from_str(&text).unwrap();
        assert_eq!(s.kind, TestKind::Kselftest);
        s
    }

    /// Issue 8, item 4: the list of sources is part of the key, as are
    /// their bytes and the libraries.
    #[test]
    fn program_key_covers_sources_list_bytes_and_libs() {
        let a = |n: &str, b: &str| (n.to_string(), b.as_bytes().to_vec());
        let f = vec!["-static".to_string()];
        let one = program_key(
            Arch::X86_64,
            &f,
            &spec(&["cap"], &["x.c"]),
            &[a("x.c", "int main(){}")],
            &[],
            Some("h"),
        );
        let two = program_key(
            Arch::X86_64,
            &f,
            &spec(&["cap"], &["x.c", "y.c"]),
            &[a("x.c", "int main(){}"), a("y.c", "")],
            &[],
            Some("h"),
        );
        let edited = program_key(
            Arch::X86_64,
            &f,
            &spec(&["cap"], &["x.c"]),
            &[a("x.c", "int main(){return 1;}")],
            &[],
            Some("h"),
        );
        let libs = program_key(
            Arch::X86_64,
            &f,
            &spec(&["cap", "m"], &["x.c"]),
            &[a("x.c", "int main(){}")],
            &[],
            Some("h"),
        );
        let arm = program_key(
            Arch::Arm64,
            &f,
            &spec(&["cap"], &["x.c"]),
            &[a("x.c", "int main(){}")],
            &[],
            Some("h"),
        );
        let hdr = program_key(
            Arch::X86_64,
            &f,
            &spec(&["cap"], &["x.c"]),
            &[a("x.c", "int main(){}")],
            &[],
            Some("h2"),
        );
        let keys = [&one, &two, &edited, &libs, &arm, &hdr];
        for (i, x) in keys.iter().enumerate() {
            for y in &keys[i + 1..] {
                assert_ne!(x, y);
            }
        }
        assert_eq!(
            one,
            program_key(
                Arch::X86_64,
                &f,
                &spec(&["cap"], &["x.c"]),
                &[a("x.c", "int main(){}")],
                &[],
                Some("h")
            )
        );
    }
}
