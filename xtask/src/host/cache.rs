//! The content-keyed cache outside the checkout (`$KMATRIX_CACHE`, else
//! `$XDG_CACHE_HOME/kmatrix`, else `~/.cache/kmatrix`), shared by fresh
//! clones and CI runs on the same machine, and guarded by a lock.
//!
//! Layout:
//!   src/<source-id>/          pristine base tree, a git repo (commit "base")
//!   trees/<kernel>/build/     worktree switched to the variant being built
//!   trees/<kernel>/work/      worktree for applying series and selftests
//!   config/<key>/.config      final configs by input hash
//!   build/<kernel>/<arch>/<config>[.slotN]/  persistent O= dirs, shared by
//!                             variants (build::slots)
//!   probe/                    accelerator probe verdicts, per host boot
//!   kernels/<key>/            built images by content key + manifest.json
//!   guest/<key>/              static guest programs
//!   headers/<key>/            headers_install output

use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use sha2::{Digest, Sha256};

pub struct Cache {
    pub root: PathBuf,
    _lock: File,
}

pub fn default_root() -> PathBuf {
    if let Some(p) = std::env::var_os("KMATRIX_CACHE") {
        return PathBuf::from(p);
    }
    let base = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(std::env::var_os("HOME").unwrap_or_else(|| "/tmp".into())).join(".cache")
        });
    base.join("kmatrix")
}

/// Below this much free space under the cache a run is refused: an
/// initramfs, a run's logs and one incremental build already take
/// hundreds of MB.
pub const REFUSE_BELOW: u64 = 1 << 30;
/// Below this much a run goes on with a warning: a kernel source imported
/// and built takes 2-3 GB (docs/measurements.md).
pub const WARN_BELOW: u64 = 8 << 30;

/// The bytes free to this user on the file system holding `path`.
pub fn free_bytes(path: &Path) -> Option<u64> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes()).ok()?;
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: `c` is a NUL-terminated path and `st` a statvfs to fill.
    if unsafe { libc::statvfs(c.as_ptr(), &mut st) } != 0 {
        return None;
    }
    Some((st.f_bavail as u64).saturating_mul(st.f_frsize as u64))
}

/// What `free` bytes under the cache `root` allow: Err (refused) below
/// `REFUSE_BELOW`, a warning below `WARN_BELOW`.
pub fn space_verdict(root: &Path, free: u64) -> Result<Option<String>> {
    let gib = |b: u64| format!("{:.1} GiB", b as f64 / (1u64 << 30) as f64);
    if free < REFUSE_BELOW {
        bail!(
            "the cache {} has {} free, less than the {} a run needs at least: free some space \
             there (old kernels under {}/trees and {}/build can go; they are rebuilt when needed) \
             or point KMATRIX_CACHE elsewhere",
            root.display(),
            gib(free),
            gib(REFUSE_BELOW),
            root.display(),
            root.display()
        );
    }
    Ok((free < WARN_BELOW).then(|| {
        format!(
            "warning: the cache {} has {} free; a kernel source imported and built takes 2-3 GB, \
             so a build may run out of space",
            root.display(),
            gib(free)
        )
    }))
}

impl Cache {
    /// Refused when the file system holding the cache is all but full;
    /// a warning (returned) when it is low.
    pub fn check_space(&self) -> Result<Option<String>> {
        match free_bytes(&self.root) {
            Some(free) => space_verdict(&self.root, free),
            None => Ok(None),
        }
    }

    /// Opens the cache, waiting for another run's lock (with a message) or,
    /// with `wait == false`, refusing.
    pub fn open(root: PathBuf, wait: bool) -> Result<Cache> {
        std::fs::create_dir_all(&root)
            .with_context(|| format!("creating cache {}", root.display()))?;
        let lock_path = root.join("lock");
        let lock = File::options().create(true).append(true).open(&lock_path)?;
        // std's File::lock is flock(2) on Linux: `flock lock cmd` in a shell
        // (the tests) and other runs see the same lock.
        match lock.try_lock() {
            Ok(()) => {}
            Err(std::fs::TryLockError::WouldBlock) => {
                let holder = std::fs::read_to_string(root.join("lock.owner")).unwrap_or_default();
                if !wait {
                    bail!("the cache {} is in use by another run ({}); refusing (without --no-wait it waits)", root.display(), holder.trim());
                }
                eprintln!(
                    "kmatrix: waiting for the cache lock {} held by {}",
                    lock_path.display(),
                    holder.trim()
                );
                lock.lock()
                    .with_context(|| format!("locking {}", lock_path.display()))?;
            }
            Err(std::fs::TryLockError::Error(e)) => bail!("locking {}: {e}", lock_path.display()),
        }
        let _ = std::fs::write(
            root.join("lock.owner"),
            format!("pid {}\n", std::process::id()),
        );
        Ok(Cache { root, _lock: lock })
    }

    pub fn dir(&self, parts: &[&str]) -> PathBuf {
        let mut p = self.root.clone();
        for part in parts {
            p.push(part);
        }
        p
    }
}

pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

pub fn sha256_file(path: &Path) -> Result<String> {
    let mut f = File::open(path).with_context(|| format!("opening {}", path.display()))?;
    let mut h = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = f.read(&mut buf)?;
        if n == 0 {
            break;
        }
        h.update(&buf[..n]);
    }
    Ok(hex(&h.finalize()))
}

/// Hashes labelled parts so that ("ab","c") and ("a","bc") differ.
#[derive(Default)]
pub struct KeyBuilder(Sha256);

impl KeyBuilder {
    pub fn new(kind: &str) -> Self {
        let mut k = KeyBuilder(Sha256::new());
        k.add("kind", kind.as_bytes());
        k
    }
    pub fn add(&mut self, label: &str, data: &[u8]) -> &mut Self {
        self.0.update((label.len() as u64).to_le_bytes());
        self.0.update(label.as_bytes());
        self.0.update((data.len() as u64).to_le_bytes());
        self.0.update(data);
        self
    }
    pub fn finish(&self) -> String {
        hex(&self.0.clone().finalize())[..24].to_string()
    }
}

/// Writes `data` to `path` through a temporary file and a rename.
pub fn write_atomic(path: &Path, data: &[u8]) -> Result<()> {
    if let Some(d) = path.parent() {
        std::fs::create_dir_all(d)?;
    }
    let tmp = path.with_file_name(format!(
        ".{}.tmp",
        path.file_name().unwrap().to_string_lossy()
    ));
    std::fs::write(&tmp, data).with_context(|| format!("writing {}", tmp.display()))?;
    std::fs::rename(&tmp, path).with_context(|| format!("renaming {}", path.display()))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_cache_is_refused_and_a_low_one_warned_of() {
        let r = Path::new("/c");
        let e = space_verdict(r, 512 << 20).unwrap_err().to_string();
        assert!(
            e.starts_with("the cache /c has 0.5 GiB free, less than the 1.0 GiB"),
            "{e}"
        );
        let w = space_verdict(r, 3 << 30).unwrap().unwrap();
        assert!(
            w.starts_with("warning: the cache /c has 3.0 GiB free"),
            "{w}"
        );
        assert_eq!(space_verdict(r, 9 << 30).unwrap(), None);
        // The real file system answers.
        assert!(free_bytes(Path::new("/")).is_some_and(|b| b > 0));
        assert_eq!(free_bytes(Path::new("/no/such/dir")), None);
    }

    /// The expected keys are from Python, not from this code: each part is
    /// u64-LE length + label + u64-LE length + data, the kind first:
    ///   h = hashlib.sha256(); for label, data in [("kind", b"k"), ("x", b"ab"), ("y", b"c")]:
    ///       h.update(struct.pack("<Q", len(label)) + label.encode() + struct.pack("<Q", len(data)) + data)
    ///   h.hexdigest()[:24]
    /// A change of framing or hash changes every cache key (a cold cache,
    /// not a wrong one), and this test says so.
    #[test]
    fn keys_separate_parts() {
        let a = KeyBuilder::new("k").add("x", b"ab").add("y", b"c").finish();
        let b = KeyBuilder::new("k").add("x", b"a").add("y", b"bc").finish();
        assert_eq!(a, "c2029b1f2ae4258beeb38b99");
        assert_eq!(b, "cc4d8ce1c798785f2d6e78bb");
        assert_eq!(KeyBuilder::new("k").finish(), "4efe3d6af95f1c4537ddb2f2");
    }

    #[test]
    fn second_open_refuses_without_wait() {
        let root = crate::util::test_tmp().join(format!("kmatrix-lock-{}", std::process::id()));
        let first = Cache::open(root.clone(), false).unwrap();
        // flock locks belong to the open file description: a second open in
        // the same process conflicts just as another process would.
        let e = Cache::open(root.clone(), false)
            .err()
            .expect("second open must refuse");
        assert!(e.to_string().contains("in use by another run"), "{e}");
        drop(first);
        Cache::open(root.clone(), false).unwrap();
        std::fs::remove_dir_all(root).unwrap();
    }
}
