//! Downloads into the cache: a file named by its URL and pinned by its
//! SHA-256. The bytes go to `NAME.part` first and are renamed into place
//! only when complete and matching the checksum, so a finished download is
//! never half-written and a broken one resumes where it stopped (an HTTP
//! range request; a server that ignores the range sends the whole file
//! again). A checksum mismatch keeps nothing.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{bail, Context, Result};
use sha2::{Digest, Sha256};

use crate::host::cache::{hex, Cache};
use crate::plan::matrix::KERNEL_ORG;

/// How long a stalled connection may stay silent.
const READ_TIMEOUT: Duration = Duration::from_secs(60);

/// The file's name: the URL's last path component.
fn file_name(url: &str) -> Result<String> {
    crate::plan::matrix::url_file_name(url)
        .map(str::to_string)
        .map_err(|e| anyhow::anyhow!("download {url}: {e}"))
}

fn agent() -> ureq::Agent {
    ureq::AgentBuilder::new()
        .timeout_connect(Duration::from_secs(30))
        .timeout_read(READ_TIMEOUT)
        .user_agent(concat!("kmatrix/", env!("CARGO_PKG_VERSION")))
        .build()
}

fn get(url: &str, from: u64) -> Result<ureq::Response> {
    let mut req = agent().get(url);
    if from > 0 {
        req = req.set("Range", &format!("bytes={from}-"));
    }
    match req.call() {
        Ok(r) => Ok(r),
        Err(ureq::Error::Status(code, r)) => {
            bail!(
                "download {url}: the server answered {code} {}",
                r.status_text()
            )
        }
        Err(e) => bail!("download {url}: {e}"),
    }
}

/// A kernel.org release's `url`, from the mirror `KMATRIX_KERNEL_ORG`
/// names in place of kernel.org's tarball directory when it is set.
pub fn mirrored(url: &str) -> String {
    let mirror = std::env::var("KMATRIX_KERNEL_ORG").ok();
    match (mirror, url.strip_prefix(KERNEL_ORG)) {
        (Some(m), Some(rest)) if !m.trim().is_empty() => {
            format!("{}{rest}", m.trim_end_matches('/'))
        }
        _ => url.to_string(),
    }
}

/// A small text file (a checksum list), read whole.
pub fn text(url: &str) -> Result<String> {
    let mut s = String::new();
    get(url, 0)?
        .into_reader()
        .take(16 << 20)
        .read_to_string(&mut s)
        .with_context(|| format!("download {url}: reading the answer"))?;
    Ok(s)
}

/// The SHA-256 of everything already in `path` (empty when absent).
fn hash_so_far(path: &Path) -> Result<(Sha256, u64)> {
    let mut h = Sha256::new();
    let Ok(mut f) = std::fs::File::open(path) else {
        return Ok((h, 0));
    };
    let mut buf = vec![0u8; 1 << 20];
    let mut n = 0u64;
    loop {
        let k = f.read(&mut buf)?;
        if k == 0 {
            return Ok((h, n));
        }
        h.update(&buf[..k]);
        n += k as u64;
    }
}

/// `cache/downloads/<sha256 prefix>/<name>`, downloaded from `url` unless
/// already there. `log` gets one line when a download starts, resumes and
/// ends; on a terminal a progress bar shows the bytes.
pub fn fetch(url: &str, sha256: &str, cache: &Cache, log: &mut dyn FnMut(&str)) -> Result<PathBuf> {
    let sha256 = sha256.trim().to_ascii_lowercase();
    if sha256.len() != 64 || !sha256.bytes().all(|b| b.is_ascii_hexdigit()) {
        bail!("download {url}: `{sha256}` is not a SHA-256 (64 hex digits)");
    }
    let name = file_name(url)?;
    let dir = cache.dir(&["downloads", &sha256[..16]]);
    let done = dir.join(&name);
    if done.exists() {
        return Ok(done);
    }
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let part = dir.join(format!("{name}.part"));
    let (mut hasher, mut have) = hash_so_far(&part)?;
    if have > 0 {
        log(&format!("resuming {url} at {have} bytes"));
    } else {
        log(&format!("downloading {url}"));
    }
    let resp = get(url, have)?;
    let resumed = have > 0 && resp.status() == 206;
    if have > 0 && !resumed {
        log(&format!("{url}: the server sent the whole file again"));
        hasher = Sha256::new();
        have = 0;
    }
    let rest: Option<u64> = resp.header("Content-Length").and_then(|v| v.parse().ok());
    let total = rest.map(|r| r + have);
    let mut out = std::fs::OpenOptions::new()
        .create(true)
        .write(true)
        .append(resumed)
        .truncate(!resumed)
        .open(&part)
        .with_context(|| format!("opening {}", part.display()))?;
    let bar = progress(total, have, &name);
    let mut body = resp.into_reader();
    let mut buf = vec![0u8; 1 << 16];
    let ended = loop {
        if crate::host::signals::interrupted() {
            break Err(anyhow::anyhow!("interrupted"));
        }
        match body.read(&mut buf) {
            Ok(0) => break Ok(()),
            Ok(k) => {
                out.write_all(&buf[..k])
                    .with_context(|| format!("writing {}", part.display()))?;
                hasher.update(&buf[..k]);
                have += k as u64;
                bar.set_position(have);
            }
            Err(e) => break Err(anyhow::Error::new(e)),
        }
    };
    bar.finish_and_clear();
    out.sync_all()?;
    drop(out);
    let short = total.is_some_and(|t| have < t);
    if let Err(e) = ended {
        bail!(
            "download {url} stopped at {have}{} bytes ({e}); the part is kept in {}: run again to resume",
            total.map(|t| format!(" of {t}")).unwrap_or_default(),
            part.display()
        );
    }
    if short {
        bail!(
            "download {url} ended early, at {have} of {} bytes; the part is kept in {}: run again to resume",
            total.unwrap(),
            part.display()
        );
    }
    let got = hex(&hasher.finalize());
    if got != sha256 {
        let _ = std::fs::remove_file(&part);
        bail!(
            "download {url}: checksum mismatch, SHA-256 {got} where {sha256} was pinned; \
             nothing was kept"
        );
    }
    std::fs::rename(&part, &done)
        .with_context(|| format!("renaming {} into place", part.display()))?;
    log(&format!(
        "downloaded {name}: {have} bytes, SHA-256 verified"
    ));
    Ok(done)
}

/// A byte bar on a terminal; nothing in a log.
fn progress(total: Option<u64>, at: u64, name: &str) -> indicatif::ProgressBar {
    if crate::host::ui::plain() {
        return indicatif::ProgressBar::hidden();
    }
    let bar = match total {
        Some(t) => indicatif::ProgressBar::new(t),
        None => indicatif::ProgressBar::new_spinner(),
    };
    bar.set_style(
        indicatif::ProgressStyle::with_template(
            "{prefix} [{bar:30}] {bytes}/{total_bytes} {bytes_per_sec} {eta}",
        )
        .unwrap()
        .progress_chars("=> "),
    );
    bar.set_prefix(name.to_string());
    bar.set_position(at);
    bar
}

/// The SHA-256 a `sha256sums.asc` (kernel.org's per-directory list:
/// `HEX  NAME` lines, clearsigned) gives for `name`.
pub fn sum_for(list: &str, name: &str) -> Option<String> {
    list.lines().find_map(|l| {
        let mut it = l.split_whitespace();
        let (sum, file) = (it.next()?, it.next()?);
        (file == name && sum.len() == 64 && sum.bytes().all(|b| b.is_ascii_hexdigit()))
            .then(|| sum.to_ascii_lowercase())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_file_name_is_the_last_path_component() {
        assert_eq!(
            file_name("https://cdn.kernel.org/pub/linux/kernel/v6.x/linux-6.6.63.tar.xz").unwrap(),
            "linux-6.6.63.tar.xz"
        );
        assert_eq!(file_name("http://h/a/b.tar.gz?x=1").unwrap(), "b.tar.gz");
        assert!(file_name("http://h/a/").is_err());
    }

    /// Lines as kernel.org's v6.x/sha256sums.asc has them (the clearsigned
    /// list of every file in the directory).
    #[test]
    fn a_sum_is_found_by_its_exact_file_name() {
        let list = "-----BEGIN PGP SIGNED MESSAGE-----\nHash: SHA256\n\n\
            0c6a5b4ba7ec5e7d9e9e8b3d0f2b5c7b8f9d8f1c3e8c9f3b8a0a2d2d7d8e3d1a  linux-6.6.63.tar.gz\n\
            A1B2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f90  linux-6.6.63.tar.xz\n\
            ffff5b4ba7ec5e7d9e9e8b3d0f2b5c7b8f9d8f1c3e8c9f3b8a0a2d2d7d8e3d1a  linux-6.6.63.tar.xz.sign\n";
        assert_eq!(
            sum_for(list, "linux-6.6.63.tar.xz").unwrap(),
            "a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f90"
        );
        assert_eq!(sum_for(list, "linux-6.6.6.tar.xz"), None);
    }
}
