//! A series as the matrix names it: a directory of patch files in order,
//! or one mbox (`mbox`: its numbered patches, checked). Plan input (how
//! many patches a series has, which one is the Nth); `build::series`
//! loads, hashes and splits it, `build::source` applies it.

pub mod mbox;
#[cfg(test)]
mod mutations;

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

use crate::util::{read_input, read_input_text, MAX_MAIL, MAX_MATRIX};

/// The patch files of `dir` in order: `dir/series` (quilt order, `#`
/// comments and blank lines skipped) or, without it, `*.patch` sorted by
/// name. Err when there are none, or when the `series` file lists what is
/// not a regular file inside the series directory (a missing file, a path
/// or symbolic link leading out of it), named at `series:LINE`. The same
/// for a series in matrix.toml and one given with `--series`. One
/// exception: a series kept in the kmatrix checkout may name patches
/// elsewhere in the checkout (its test series build on its payloads).
pub fn files(name: &str, dir: &Path) -> Result<Vec<PathBuf>> {
    let order = dir.join("series");
    let patches: Vec<PathBuf> = if order.exists() {
        let text = read_input_text(&order, MAX_MATRIX, "series file")?;
        let home = std::fs::canonicalize(dir)
            .with_context(|| format!("series {name}: {}", dir.display()))?;
        let checkout = std::fs::canonicalize(crate::util::checkout_root()).ok();
        let fence = match checkout {
            Some(c) if home.starts_with(&c) => c,
            _ => home,
        };
        let mut v = Vec::new();
        for (i, l) in text.lines().enumerate() {
            let l = l.trim();
            if l.is_empty() || l.starts_with('#') {
                continue;
            }
            let at = format!("series {name}: {}:{}", order.display(), i + 1);
            let p = dir.join(l);
            let Ok(real) = std::fs::canonicalize(&p) else {
                bail!("{at}: `{l}` is listed but there is no such file");
            };
            if !real.starts_with(&fence) {
                bail!(
                    "{at}: `{l}` leads out of the series directory (to {}), expected a patch file beside the `series` file",
                    real.display()
                );
            }
            if !real.is_file() {
                bail!("{at}: `{l}` is listed but is not a regular file");
            }
            v.push(p);
        }
        v
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

/// How many patches the series at `path` has: a directory's files, or an
/// mbox's numbered patches.
pub fn count(name: &str, path: &Path) -> Result<usize> {
    if path.is_file() {
        let text = read_input(path, MAX_MAIL, "mbox")?;
        let shown = path.display().to_string();
        return Ok(mbox::patches(&shown, &String::from_utf8_lossy(&text))?.len());
    }
    Ok(files(name, path)?.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn series_file_order_else_patches_by_name() {
        let d = crate::util::test_tmp().join(format!("kmatrix-series-{}", std::process::id()));
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
