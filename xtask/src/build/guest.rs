//! Guest programs: kselftests compiled from a kernel tree against that
//! tree's exported headers, and benchmarks from rootfs/guest/, all static,
//! with the guest arch's gcc; then the initramfs that carries them.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result};

use crate::build::cpio::Entry;
use crate::build::kbuild::{compiler_version, make_args};
use crate::build::{ksft, perf};
use crate::host::cache::{write_atomic, Cache, KeyBuilder};
use crate::host::proc::{self, limit};
use crate::kinds::{self, Recipe};
use crate::plan::arch::{Accel, Arch};
use crate::plan::matrix::TestSpec;

/// A compiled guest program and how the init runs it.
#[derive(Debug, Clone)]
pub struct Program {
    pub test: String,
    /// A compiled binary, or a script carried in the initramfs as-is.
    pub binary: PathBuf,
    pub script: Option<String>,
    /// More binaries in the test's directory (kind = "programs").
    pub extra: Vec<PathBuf>,
    /// A directory copied whole into the test's directory, under this
    /// name (a kselftest target's install).
    pub tree: Option<(PathBuf, String)>,
    /// Files at absolute paths of the guest (shared libraries, the loader).
    pub files: Vec<(String, PathBuf)>,
    /// The timeout of each case, passed to the program as its first
    /// argument after the accelerator's scaling (kind = "target").
    pub case_timeout_s: Option<u64>,
    pub args: Vec<String>,
    /// Guest timeout for real hardware; the initramfs scales it for the
    /// accelerator (`timeout_scale`).
    pub timeout_s: u64,
    /// Runs in boots 1..=last_boot only; 0: every boot.
    pub last_boot: u32,
    pub compile_cmd: String,
    /// What the compiler said of a program that built (its warnings), kept
    /// beside the cached binary so a cached program says it too.
    pub compiler_output: String,
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
    make.args(make_args(tree, &dir, arch, false))
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
    /// Kconfig symbols the kernel tree does not have: programs that need
    /// one are not built.
    pub absent: &'a [String],
    /// make's `-j` for programs built by the tree's own Makefile (perf).
    pub jobs: usize,
}

/// kselftest timeouts assume real hardware; emulation is slower.
pub fn timeout_scale(accel: &Accel) -> u64 {
    if *accel == Accel::Kvm {
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
    libs: &[String],
    sources: &[(String, Vec<u8>)],
    parts: &[(String, String)],
    headers: Option<&str>,
) -> String {
    let mut key = KeyBuilder::new("guest-program");
    key.add("arch", arch.name().as_bytes())
        .add("cc", compiler_version(arch, false).as_bytes());
    key.add("flags", format!("{flags:?}").as_bytes())
        .add("libs", format!("{libs:?}").as_bytes());
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

/// One static program to compile.
struct Unit<'a> {
    /// Binary name.
    name: &'a str,
    sources: &'a [PathBuf],
    cflags: &'a [String],
    tree_headers: bool,
    includes: &'a [PathBuf],
    libs: &'a [String],
    key_parts: &'a [(String, String)],
}

/// Compiles one program into the cache (keyed by content; a cached binary
/// is reused): (binary, command, what the compiler said).
/// Ok(Err((cmd, stderr))): the compiler failed.
#[allow(clippy::type_complexity)]
fn compile_unit(
    job: &CompileJob,
    test: &str,
    u: &Unit,
) -> Result<std::result::Result<(PathBuf, String, String), (String, String)>> {
    let cc = job.arch.gcc();
    let flags: Vec<String> = ["-static", "-O2", "-Wall"]
        .iter()
        .map(|s| s.to_string())
        .chain(u.cflags.iter().cloned())
        .collect();
    let mut cmd: Vec<String> = std::iter::once(cc.clone())
        .chain(flags.iter().cloned())
        .collect();
    let headers_dir = if u.tree_headers {
        Some(headers(job.cache, job.tree, job.uapi_id, job.arch)?)
    } else {
        None
    };
    if let Some(h) = &headers_dir {
        // As the selftests Makefile does: exported headers first.
        cmd.push("-isystem".into());
        cmd.push(h.display().to_string());
    }
    for i in u.includes {
        cmd.push(format!("-I{}", i.display()));
    }
    let mut keyed = Vec::new();
    for s in u.sources {
        let bytes =
            std::fs::read(s).with_context(|| format!("test {test}: reading {}", s.display()))?;
        keyed.push((
            s.file_name()
                .unwrap_or_default()
                .to_string_lossy()
                .into_owned(),
            bytes,
        ));
        cmd.push(s.display().to_string());
    }
    for l in u.libs {
        cmd.push(format!("-l{l}"));
    }
    let key = program_key(
        job.arch,
        &flags,
        u.libs,
        &keyed,
        u.key_parts,
        headers_dir.as_ref().map(|_| job.uapi_id),
    );
    let out_dir = job.cache.dir(&["guest", &key]);
    let binary = out_dir.join(u.name);
    cmd.push("-o".into());
    cmd.push(binary.display().to_string());
    let compile_cmd = cmd.join(" ");
    let said = out_dir.join(format!("{}.stderr", u.name));
    // A binary cached without the compiler's words is compiled again.
    if binary.exists() {
        if let Ok(text) = std::fs::read_to_string(&said) {
            return Ok(Ok((binary, compile_cmd, text)));
        }
    }
    std::fs::create_dir_all(&out_dir)?;
    let tmp = out_dir.join(format!(".{}.tmp", u.name));
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
        return Ok(Err((compile_cmd, why + &out.stderr)));
    }
    // Atomic: a compile killed half-way never leaves a binary to reuse.
    write_atomic(&said, out.stderr.as_bytes())?;
    std::fs::rename(&tmp, &binary)?;
    Ok(Ok((binary, compile_cmd, out.stderr)))
}

pub fn compile(job: &CompileJob, name: &str, spec: &TestSpec) -> Result<CompileOutcome> {
    let recipe = kinds::of(spec.kind).recipe(name, spec, job.tree, job.repo_root)?;
    let last_boot = spec.boots.unwrap_or(0);
    let failed = |(cmd, stderr): (String, String)| CompileOutcome::Failed {
        test: name.into(),
        cmd,
        stderr,
    };
    match recipe {
        Recipe::Script(text) => Ok(CompileOutcome::Ok(Program {
            test: name.to_string(),
            binary: PathBuf::from("run.sh"),
            script: Some(text),
            extra: vec![],
            tree: None,
            files: vec![],
            case_timeout_s: None,
            args: spec.args.clone(),
            timeout_s: spec.timeout_s.unwrap_or(60),
            last_boot,
            compile_cmd: String::new(),
            compiler_output: String::new(),
        })),
        Recipe::Compile {
            sources,
            tree_headers,
            includes,
            key_parts,
            default_timeout_s,
        } => {
            let unit = Unit {
                name,
                sources: &sources,
                cflags: &[],
                tree_headers,
                includes: &includes,
                libs: &spec.libs,
                key_parts: &key_parts,
            };
            Ok(match compile_unit(job, name, &unit)? {
                Err(e) => failed(e),
                Ok((binary, compile_cmd, compiler_output)) => CompileOutcome::Ok(Program {
                    test: name.to_string(),
                    binary,
                    script: None,
                    extra: vec![],
                    tree: None,
                    files: vec![],
                    case_timeout_s: None,
                    args: spec.args.clone(),
                    timeout_s: spec.timeout_s.unwrap_or(default_timeout_s),
                    last_boot,
                    compile_cmd,
                    compiler_output,
                }),
            })
        }
        Recipe::Perf {
            dir,
            script,
            mut key_parts,
            default_timeout_s,
        } => {
            let (extra, compile_cmd, compiler_output) = match dir {
                None => (vec![], String::new(), String::new()),
                Some(dir) => {
                    key_parts.push(("headers".into(), job.uapi_id.to_string()));
                    match perf::build(job.cache, &dir, job.arch, &key_parts, job.jobs)? {
                        perf::Built::Ok { binary, cmd, said } => (vec![binary], cmd, said),
                        perf::Built::Failed { cmd, output } => return Ok(failed((cmd, output))),
                    }
                }
            };
            Ok(CompileOutcome::Ok(Program {
                test: name.to_string(),
                binary: PathBuf::from("run.sh"),
                script: Some(script),
                extra,
                tree: None,
                files: vec![],
                case_timeout_s: None,
                args: vec![],
                timeout_s: spec.timeout_s.unwrap_or(default_timeout_s),
                last_boot,
                compile_cmd,
                compiler_output,
            }))
        }
        Recipe::Programs {
            programs,
            includes,
            key_parts,
            default_timeout_s,
        } => {
            let mut extra = Vec::new();
            let mut cmds = Vec::new();
            let mut said = String::new();
            let mut unbuilt = Vec::new();
            for p in &programs {
                if let Some(sym) = p.needs.iter().find(|s| job.absent.contains(s)) {
                    unbuilt.push((p.name.clone(), format!("no {sym} in this kernel")));
                    continue;
                }
                let unit = Unit {
                    name: &p.name,
                    sources: &p.sources,
                    cflags: &p.cflags,
                    tree_headers: true,
                    includes: &includes,
                    libs: &spec.libs,
                    key_parts: &key_parts,
                };
                match compile_unit(job, name, &unit)? {
                    Err(e) => return Ok(failed(e)),
                    Ok((binary, cmd, text)) => {
                        extra.push(binary);
                        cmds.push(cmd);
                        said += &text;
                    }
                }
            }
            Ok(CompileOutcome::Ok(Program {
                test: name.to_string(),
                binary: PathBuf::from("run.sh"),
                script: Some(kinds::programs::script(&spec.cases, &unbuilt)),
                extra,
                tree: None,
                files: vec![],
                case_timeout_s: None,
                args: vec![],
                timeout_s: spec.timeout_s.unwrap_or(default_timeout_s),
                last_boot,
                compile_cmd: cmds.join("\n"),
                compiler_output: said,
            }))
        }
        Recipe::Target {
            tree,
            target,
            only,
            key_parts,
            program_timeout_s,
        } => {
            let headers = headers(job.cache, &tree, job.uapi_id, job.arch)?;
            let mut key_parts = key_parts;
            key_parts.push(("headers".into(), job.uapi_id.to_string()));
            let built = ksft::build(
                job.cache, &tree, &target, job.arch, &headers, &key_parts, job.jobs,
            )?;
            let i = match built {
                ksft::Built::Ok(i) => i,
                ksft::Built::Failed { cmd, output } => return Ok(failed((cmd, output))),
            };
            let all = kinds::target::programs(&i.list, &target, &[]);
            let run = kinds::target::programs(&i.list, &target, &only);
            let absent: Vec<String> = only.iter().filter(|o| !all.contains(o)).cloned().collect();
            let n = (run.len() + absent.len()).max(1) as u64;
            let sub = target.replace('/', "-");
            Ok(CompileOutcome::Ok(Program {
                test: name.to_string(),
                binary: PathBuf::from("run.sh"),
                script: Some(kinds::target::script(&sub, &run, &absent)),
                extra: vec![],
                tree: Some((i.dir, sub)),
                files: i.libs,
                case_timeout_s: Some(program_timeout_s),
                args: vec![],
                // Every program at its own limit, and a little for the
                // script; the matrix's timeout_s bounds the whole.
                timeout_s: spec.timeout_s.unwrap_or(program_timeout_s * n + 10),
                last_boot,
                compile_cmd: i.cmd,
                compiler_output: i.said,
            }))
        }
    }
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
    let mut list = String::from("# name timeout_s last_boot(0: every) command...\n");
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
        for x in &p.extra {
            e.push(Entry::File {
                path: format!(
                    "tests/{}/{}",
                    p.test,
                    x.file_name().unwrap().to_string_lossy()
                ),
                mode: 0o755,
                data: read(x)?,
            });
        }
        if let Some((from, sub)) = &p.tree {
            tree_entries(from, &format!("tests/{}/{sub}", p.test), &mut e)?;
        }
        for (guest, host) in &p.files {
            let guest = guest.trim_start_matches('/');
            // Each parent once, before its first file.
            let mut parent = String::new();
            for part in guest
                .split('/')
                .collect::<Vec<_>>()
                .split_last()
                .map_or(&[][..], |(_, d)| d)
            {
                parent = if parent.is_empty() {
                    part.to_string()
                } else {
                    format!("{parent}/{part}")
                };
                if !e
                    .iter()
                    .any(|x| matches!(x, Entry::Dir { path, .. } if *path == parent))
                {
                    e.push(dir(&parent));
                }
            }
            // Two tests may carry the same library.
            if !e
                .iter()
                .any(|x| matches!(x, Entry::File { path, .. } if path == guest))
            {
                e.push(Entry::File {
                    path: guest.to_string(),
                    mode: 0o755,
                    data: read(host)?,
                });
            }
        }
        let args: Vec<String> = p
            .case_timeout_s
            .map(|t| (t * timeout_scale).to_string())
            .into_iter()
            .chain(p.args.iter().cloned())
            .collect();
        list.push_str(&format!(
            "{} {} {} ./{bin} {}\n",
            p.test,
            p.timeout_s * timeout_scale,
            p.last_boot,
            args.join(" ")
        ));
    }
    e.push(Entry::File {
        path: "etc/kmatrix/tests".into(),
        mode: 0o644,
        data: list.into_bytes(),
    });
    Ok(crate::build::cpio::gzip(&crate::build::cpio::write(&e)))
}

/// The files, links and directories under `from`, as entries under
/// `to`, in a stable order.
fn tree_entries(from: &Path, to: &str, e: &mut Vec<Entry>) -> Result<()> {
    e.push(Entry::Dir {
        path: to.into(),
        mode: 0o755,
    });
    let mut names: Vec<std::fs::DirEntry> = std::fs::read_dir(from)
        .with_context(|| format!("reading {}", from.display()))?
        .collect::<std::io::Result<_>>()?;
    names.sort_by_key(|d| d.file_name());
    for d in names {
        let path = format!("{to}/{}", d.file_name().to_string_lossy());
        let t = d.file_type()?;
        if t.is_dir() {
            tree_entries(&d.path(), &path, e)?;
        } else if t.is_symlink() {
            e.push(Entry::Symlink {
                path,
                target: std::fs::read_link(d.path())?.display().to_string(),
            });
        } else if t.is_file() {
            use std::os::unix::fs::PermissionsExt;
            let mode = d.metadata()?.permissions().mode() & 0o777;
            e.push(Entry::File {
                path,
                mode,
                data: std::fs::read(d.path())
                    .with_context(|| format!("reading {}", d.path().display()))?,
            });
        }
    }
    Ok(())
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

    /// The list of sources is part of the key, as are their bytes and the
    /// libraries.
    #[test]
    fn program_key_covers_sources_list_bytes_and_libs() {
        let a = |n: &str, b: &str| (n.to_string(), b.as_bytes().to_vec());
        let f = vec!["-static".to_string()];
        let one = program_key(
            Arch::X86_64,
            &f,
            &spec(&["cap"], &["x.c"]).libs,
            &[a("x.c", "int main(){}")],
            &[],
            Some("h"),
        );
        let two = program_key(
            Arch::X86_64,
            &f,
            &spec(&["cap"], &["x.c", "y.c"]).libs,
            &[a("x.c", "int main(){}"), a("y.c", "")],
            &[],
            Some("h"),
        );
        let edited = program_key(
            Arch::X86_64,
            &f,
            &spec(&["cap"], &["x.c"]).libs,
            &[a("x.c", "int main(){return 1;}")],
            &[],
            Some("h"),
        );
        let libs = program_key(
            Arch::X86_64,
            &f,
            &spec(&["cap", "m"], &["x.c"]).libs,
            &[a("x.c", "int main(){}")],
            &[],
            Some("h"),
        );
        let arm = program_key(
            Arch::Arm64,
            &f,
            &spec(&["cap"], &["x.c"]).libs,
            &[a("x.c", "int main(){}")],
            &[],
            Some("h"),
        );
        let hdr = program_key(
            Arch::X86_64,
            &f,
            &spec(&["cap"], &["x.c"]).libs,
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
                &spec(&["cap"], &["x.c"]).libs,
                &[a("x.c", "int main(){}")],
                &[],
                Some("h")
            )
        );
    }
}
