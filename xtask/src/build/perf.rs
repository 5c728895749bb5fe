//! The tree's own `tools/perf`, built static for a guest arch with its own
//! Makefile (`kind = "perf"`): only what `perf bench` needs, every optional
//! library left out, so nothing beyond the arch's C library is linked.
//! Cached by content: the tree's `tools/` and exported headers' inputs,
//! the arch, the compiler and the make variables.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::Result;

use crate::build::kbuild::compiler_version;
use crate::host::cache::{write_atomic, Cache, KeyBuilder};
use crate::host::proc::{self, limit};
use crate::plan::arch::Arch;

/// perf's optional features, each off: feature detection would find some
/// on the host (for x86_64) and none for a cross target, and a static link
/// needs every library static. `WERROR=0`: a newer compiler's new warnings
/// in an older perf are not the series' doing. No `BUILD_BPF_SKEL`: 6.1
/// reads any value as "on" (`ifdef`), and 6.12 turns it off itself
/// without libelf.
const MAKE_VARS: &[&str] = &[
    "LDFLAGS=-static",
    "WERROR=0",
    "NO_LIBELF=1",
    "NO_LIBTRACEEVENT=1",
    "NO_JEVENTS=1",
    "NO_LIBPYTHON=1",
    "NO_LIBPERL=1",
    "NO_SLANG=1",
    "NO_GTK2=1",
    "NO_LIBBPF=1",
    "NO_LIBUNWIND=1",
    "NO_LIBDW_DWARF_UNWIND=1",
    "NO_LIBNUMA=1",
    "NO_LIBAUDIT=1",
    "NO_LIBCRYPTO=1",
    "NO_LIBZSTD=1",
    "NO_LZMA=1",
    "NO_ZLIB=1",
    "NO_LIBCAP=1",
    "NO_DEMANGLE=1",
    "NO_LIBBABELTRACE=1",
    "NO_AUXTRACE=1",
    "NO_SDT=1",
    "NO_LIBPFM4=1",
    "NO_LIBDEBUGINFOD=1",
    "NO_CAPSTONE=1",
    "NO_LIBLLVM=1",
    "NO_BACKTRACE=1",
    // As perf's own static build test (tools/perf/tests/make, make_static).
    "NO_PERF_READ_VDSO32=1",
    "NO_PERF_READ_VDSOX32=1",
    "NO_JVMTI=1",
];

/// A perf build: the binary, or the failed make's command and output.
pub enum Built {
    Ok {
        binary: PathBuf,
        cmd: String,
        /// What make and the compiler said (its warnings).
        said: String,
    },
    Failed {
        cmd: String,
        output: String,
    },
}

/// The make command line (also the reproducer). `asm`: a directory whose
/// `asm/` holds the headers the arch's compiler does not search
/// (`ArchInfo::tools_asm`).
pub fn make_command(
    tools_perf: &Path,
    out: &Path,
    arch: Arch,
    jobs: usize,
    asm: Option<&Path>,
) -> Vec<String> {
    let mut v = vec![
        "make".to_string(),
        "-C".into(),
        tools_perf.display().to_string(),
        format!("O={}", out.display()),
        // perf's own name for the arch (tools/scripts/Makefile.arch maps
        // x86_64 to x86 itself).
        format!("ARCH={}", arch.name()),
    ];
    if let Some(cc) = arch.info().cross_prefix {
        v.push(format!("CROSS_COMPILE={cc}"));
    }
    v.extend(arch.info().tools_make.iter().map(|s| s.to_string()));
    if let Some(dir) = asm {
        v.push(format!("EXTRA_CFLAGS=-isystem {}", dir.display()));
    }
    v.extend(MAKE_VARS.iter().map(|s| s.to_string()));
    v.push(format!("-j{jobs}"));
    // The binary only: `all` also links shared objects (dlfilters,
    // traceevent plugins), which LDFLAGS=-static cannot make.
    v.push(out.join("perf").display().to_string());
    v
}

/// A directory of the cache whose `asm` links to `headers`: what
/// `-isystem` gives the compiler. Err(why) when the host lacks them.
fn asm_dir(
    cache: &Cache,
    arch: Arch,
    headers: &Path,
) -> Result<std::result::Result<PathBuf, String>> {
    if !headers.join("unistd.h").is_file() {
        return Ok(Err(format!(
            "tools/perf for {arch} needs {} (Debian's linux-libc-dev) and a 32-bit C library (libc6-dev-i386, lib32gcc-N-dev): run `cargo xtask setup`",
            headers.display()
        )));
    }
    let dir = cache.dir(&["perf", &format!("asm-{arch}")]);
    std::fs::create_dir_all(&dir)?;
    let link = dir.join("asm");
    if std::fs::read_link(&link).ok().as_deref() != Some(headers) {
        let tmp = dir.join(".asm.tmp");
        let _ = std::fs::remove_file(&tmp);
        std::os::unix::fs::symlink(headers, &tmp)?;
        std::fs::rename(&tmp, &link)?;
    }
    Ok(Ok(dir))
}

/// Builds (or finds in the cache) the static perf of `tools_perf` (a
/// tree's `tools/perf`) for `arch`. `key_parts`: what identifies the
/// inputs (the tree's `tools/` id, the exported headers' id).
pub fn build(
    cache: &Cache,
    tools_perf: &Path,
    arch: Arch,
    key_parts: &[(String, String)],
    jobs: usize,
) -> Result<Built> {
    let mut key = KeyBuilder::new("perf");
    key.add("arch", arch.name().as_bytes())
        .add("cc", compiler_version(arch, false).as_bytes())
        .add("vars", MAKE_VARS.join(" ").as_bytes());
    for (k, v) in key_parts {
        key.add(k, v.as_bytes());
    }
    let dir = cache.dir(&["perf", &key.finish()]);
    let binary = dir.join("perf");
    let said = dir.join("perf.make-output");
    let out = dir.join("build");
    let asm = match arch.info().tools_asm {
        None => None,
        Some(headers) => match asm_dir(cache, arch, Path::new(headers))? {
            Ok(d) => Some(d),
            Err(why) => {
                return Ok(Built::Failed {
                    cmd: format!("tools/perf for {arch}"),
                    output: why,
                })
            }
        },
    };
    let cmd = make_command(tools_perf, &out, arch, jobs, asm.as_deref());
    let shown = crate::util::shell_line(&cmd);
    if binary.exists() {
        if let Ok(text) = std::fs::read_to_string(&said) {
            return Ok(Built::Ok {
                binary,
                cmd: shown,
                said: text,
            });
        }
    }
    std::fs::create_dir_all(&out)?;
    let mut c = Command::new(&cmd[0]);
    // The compiler's own words, in ASCII quotes, on any host. perf's
    // Makefile unexports LC_ALL, so the categories are set one by one.
    c.args(&cmd[1..])
        .env("LC_ALL", "C")
        .env("LANG", "C")
        .env("LC_CTYPE", "C")
        .env("LC_MESSAGES", "C");
    let f = proc::run(c, limit::scaled(limit::GUEST_CC))?;
    let output = format!("{}{}", f.stdout, f.stderr);
    let built = out.join("perf");
    if !f.success() || !built.exists() {
        return Ok(Built::Failed {
            cmd: shown,
            output: format!("make {}\n{output}", f.describe()),
        });
    }
    // The binary is renamed into place last: a build killed half-way never
    // leaves one to reuse.
    write_atomic(&said, f.stderr.as_bytes())?;
    let tmp = dir.join(".perf.tmp");
    std::fs::copy(&built, &tmp)?;
    // Without its debug information: 3.6 MB in every initramfs, not 15.
    let strip = format!("{}strip", arch.info().cross_prefix.unwrap_or(""));
    let mut c = Command::new(&strip);
    c.arg(&tmp);
    proc::checked(&format!("{strip} perf"), c, limit::scaled(limit::GUEST_CC))?;
    std::fs::rename(&tmp, &binary)?;
    // The objects are only needed again to build the same tree, which
    // hits the cache: gone, they leave the binary and its words.
    let _ = std::fs::remove_dir_all(&out);
    Ok(Built::Ok {
        binary,
        cmd: shown,
        said: f.stderr,
    })
}
