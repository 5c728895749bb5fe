//! A series loaded for building: its patch files in order (a directory's,
//! or an mbox's split once into numbered files in the cache), their
//! hashes (a prefix of a series is a series whose hash is the longer one's
//! prefix hash), and what each patch says of itself (`PatchInfo`). Which
//! files and in what order is `plan::series`; applying them,
//! `build::source`.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

use crate::host::cache::KeyBuilder;
use crate::plan::series;

/// A patch series: the files in order and their combined hash.
#[derive(Debug, Clone)]
pub struct Series {
    pub patches: Vec<PathBuf>,
    pub hash: String,
    /// `prefix_hashes[i]`: the hash of the first i+1 patches (the last one
    /// is `hash`). A prefix of a series is a series whose hash is the
    /// longer series' prefix hash, so the commits of one serve the other.
    pub prefix_hashes: Vec<String>,
}

/// What a patch says about itself: for reports that name a culprit.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct PatchInfo {
    pub file: String,
    pub subject: String,
    pub author: String,
    /// The commit `git format-patch` wrote it from (its `From <sha>` line).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub commit: String,
}

impl PatchInfo {
    /// `From:` and `Subject:` of an mbox-format patch (folded lines joined,
    /// `[PATCH n/m]` dropped). Missing headers stay empty.
    pub fn parse(file: &str, text: &str) -> PatchInfo {
        let mut info = PatchInfo {
            file: file.to_string(),
            ..Default::default()
        };
        if let Some(sha) = text
            .lines()
            .next()
            .and_then(|l| l.strip_prefix("From "))
            .and_then(|l| l.split_whitespace().next())
        {
            if sha.len() == 40
                && sha.bytes().all(|b| b.is_ascii_hexdigit())
                && sha != "0".repeat(40)
            {
                info.commit = sha.to_string();
            }
        }
        let header = |name| crate::plan::series::mbox::header(text, name).unwrap_or_default();
        info.author = header("From");
        info.subject = header("Subject");
        let re = regex::Regex::new(r"^\[[^\]]*PATCH[^\]]*\]\s*").unwrap();
        info.subject = re.replace(&info.subject, "").to_string();
        info
    }
}

impl Series {
    /// Reads `dir/series` (quilt order) or, without it, `*.patch` sorted.
    #[cfg(test)]
    pub fn load(name: &str, dir: &Path) -> Result<Series> {
        Series::load_prefix(name, dir, None)
    }

    /// The first `take` patches of the series in `dir` (all with None).
    pub fn load_prefix(name: &str, dir: &Path, take: Option<usize>) -> Result<Series> {
        let mut patches = patch_files(name, dir)?;
        if let Some(k) = take {
            if k == 0 || k > patches.len() {
                bail!(
                    "series {name}: asked for the first {k} patches of {} ({})",
                    patches.len(),
                    dir.display()
                );
            }
            patches.truncate(k);
        }
        let mut key = KeyBuilder::new("series");
        let mut prefix_hashes = Vec::new();
        for p in &patches {
            let bytes = crate::util::read_input(p, crate::util::MAX_MAIL, "patch")
                .with_context(|| format!("series {name}"))?;
            key.add("patch", &bytes);
            prefix_hashes.push(key.finish());
        }
        Ok(Series {
            patches,
            hash: prefix_hashes.last().unwrap().clone(),
            prefix_hashes,
        })
    }

    /// File name, subject and author of every patch, in order.
    pub fn info(&self) -> Vec<PatchInfo> {
        self.patches
            .iter()
            .map(|p| {
                let name = p.file_name().unwrap().to_string_lossy().to_string();
                PatchInfo::parse(&name, &std::fs::read_to_string(p).unwrap_or_default())
            })
            .collect()
    }
}

/// The patch files of the series at `path`: a directory's, in order, or
/// an mbox's, split into files in the cache.
pub fn patch_files(name: &str, path: &Path) -> Result<Vec<PathBuf>> {
    if path.is_file() {
        split_mbox(path)
    } else {
        series::files(name, path)
    }
}

/// The patches of an mbox file, written once as numbered patch files (and
/// a `series` file) into the cache, under the hash of the mbox's bytes:
/// the same mbox always gives the same files.
fn split_mbox(file: &Path) -> Result<Vec<PathBuf>> {
    let bytes = crate::util::read_input(file, crate::util::MAX_MAIL, "mbox")?;
    let text = String::from_utf8_lossy(&bytes);
    let shown = file.display().to_string();
    let patches = crate::plan::series::mbox::patches(&shown, &text)?;
    let key = crate::host::cache::KeyBuilder::new("mbox")
        .add("bytes", &bytes)
        .finish();
    let dir = crate::host::cache::default_root()
        .join("mbox")
        .join(&key[..16])
        .join(crate::plan::variants::name_of(file));
    let names: Vec<String> = patches
        .iter()
        .map(crate::plan::series::mbox::file_name)
        .collect();
    if !dir.join("series").exists() {
        std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
        for (p, n) in patches.iter().zip(&names) {
            crate::host::cache::write_atomic(&dir.join(n), p.text.as_bytes())?;
        }
        crate::host::cache::write_atomic(
            &dir.join("series"),
            (names.join("\n") + "\n").as_bytes(),
        )?;
    }
    Ok(names.iter().map(|n| dir.join(n)).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patch_headers_give_subject_author_and_commit() {
        let text = "From 0123456789abcdef0123456789abcdef01234567 Mon Sep 17 00:00:00 2001\nFrom: Jane Dev <jane@example.org>\nDate: Tue, 1 Oct 2024\nSubject: [PATCH v2 3/4] seccomp: a long subject that\n wraps onto a second line\n\nbody\nSubject: not this\n";
        let i = PatchInfo::parse("0003-x.patch", text);
        assert_eq!(i.author, "Jane Dev <jane@example.org>");
        assert_eq!(
            i.subject,
            "seccomp: a long subject that wraps onto a second line"
        );
        assert_eq!(i.commit, "0123456789abcdef0123456789abcdef01234567");
        let z = PatchInfo::parse(
            "p",
            "From 0000000000000000000000000000000000000000 Mon\nSubject: s\n",
        );
        assert_eq!(z.commit, "");
    }
}
