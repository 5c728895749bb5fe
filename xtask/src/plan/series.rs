//! A series directory, as the matrix names it: its patch files in order.
//! Plan input (how many patches a series has, which one is the Nth);
//! build/source.rs hashes and applies them.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

/// The patch files of `dir` in order: `dir/series` (quilt order, `#`
/// comments and blank lines skipped) or, without it, `*.patch` sorted by
/// name. Err when there are none.
pub fn files(name: &str, dir: &Path) -> Result<Vec<PathBuf>> {
    if dir.is_file() {
        return from_mbox(dir);
    }
    let order = dir.join("series");
    let patches: Vec<PathBuf> = if order.exists() {
        std::fs::read_to_string(&order)?
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty() && !l.starts_with('#'))
            .map(|l| dir.join(l))
            .collect()
    } else {
        let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
            .with_context(|| format!("reading series dir {}", dir.display()))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|e| e == "patch"))
            .collect();
        v.sort();
        v
    };
    if patches.is_empty() {
        bail!("series {name}: no patches in {}", dir.display());
    }
    Ok(patches)
}

/// The patches of an mbox file, written once as numbered patch files (and
/// a `series` file) into the cache, under the hash of the mbox's bytes:
/// the same mbox always gives the same files.
fn from_mbox(file: &Path) -> Result<Vec<PathBuf>> {
    let bytes = std::fs::read(file).with_context(|| format!("reading {}", file.display()))?;
    let text = String::from_utf8_lossy(&bytes);
    let shown = file.display().to_string();
    let patches = crate::plan::mbox::patches(&shown, &text)?;
    let key = crate::host::cache::KeyBuilder::new("mbox")
        .add("bytes", &bytes)
        .finish();
    let dir = crate::host::cache::default_root()
        .join("mbox")
        .join(&key[..16])
        .join(crate::plan::variants::name_of(file));
    let names: Vec<String> = patches.iter().map(crate::plan::mbox::file_name).collect();
    if !dir.join("series").exists() {
        std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
        for (p, n) in patches.iter().zip(&names) {
            crate::host::cache::write_atomic(&dir.join(n), p.text.as_bytes())?;
        }
        crate::host::cache::write_atomic(&dir.join("series"), (names.join("\n") + "\n").as_bytes())?;
    }
    Ok(names.iter().map(|n| dir.join(n)).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn series_file_order_else_patches_by_name() {
        let d = std::env::temp_dir().join(format!("kmatrix-series-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        let e = files("s", &d).unwrap_err().to_string();
        assert_eq!(e, format!("series s: no patches in {}", d.display()));
        for f in ["0002-b.patch", "0001-a.patch", "notes.txt"] {
            std::fs::write(d.join(f), "").unwrap();
        }
        assert_eq!(
            files("s", &d).unwrap(),
            [d.join("0001-a.patch"), d.join("0002-b.patch")]
        );
        std::fs::write(
            d.join("series"),
            "# quilt order
0002-b.patch

  0001-a.patch 
",
        )
        .unwrap();
        assert_eq!(
            files("s", &d).unwrap(),
            [d.join("0002-b.patch"), d.join("0001-a.patch")]
        );
        std::fs::remove_dir_all(&d).unwrap();
    }
}
